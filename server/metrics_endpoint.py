"""GET /metrics: this process's counters and histograms, and the database figures.

The figures come from one statement at scrape time, answered from a snapshot a few seconds
old when there is one (server/domain/measures/metrics.py), so many scrapers of many
processes cost one computation per CASEWORK_METRICS_CACHE_SECONDS. Scrapes that arrive
while this process reads them share that read. If the database cannot answer, the
process's own metrics are still served: a scrape that fails whole would hide them too.

Under `casework serve --workers N` (N > 1) a scrape lands on any one of the processes, so
it serves prometheus-client's merge of every process's files (counters and histograms
summed over all processes that ever ran since serve started, gauges as their
multiprocess_mode says) instead of its own registry. The database figures are added once,
by the process that answers: they are not per process. The process_* and python_* series
of the registry are left out then, since they would describe one random process.

Access: a manager or admin bearer token for all queues (the figures cover every queue),
unless CASEWORK_METRICS_PUBLIC=1.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server.config import Settings
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.measures.metrics import Figures, QueueFigures, read_figures
from server.domain.model import Role
from server.graphql.codes import RETRY_AFTER_SECONDS, ErrorCode, error_body
from server.store.database import Database
from server.store.errors import is_unavailable

log = logging.getLogger("casework.metrics")

SCRAPING_ROLES = frozenset({Role.MANAGER, Role.ADMIN})


# The gauges of each queue: name, help, and the figure they show.
_QUEUE_GAUGES: tuple[tuple[str, str, Callable[[QueueFigures], float]], ...] = (
    ("casework_queue_pending", "Items waiting for a claim.", lambda q: q.pending),
    ("casework_queue_leased", "Items under a live lease.", lambda q: q.leased),
    (
        "casework_queue_oldest_pending_age_seconds",
        "Age of the oldest item waiting for a claim (0: none waits).",
        lambda q: q.oldest_pending_age_seconds,
    ),
    ("casework_decisions_unapplied", "Decisions not carried out yet.", lambda q: q.unapplied),
    (
        "casework_decisions_unapplied_older_than_threshold",
        "Decisions not carried out yet, recorded longer ago than "
        "CASEWORK_METRICS_UNAPPLIED_THRESHOLD_SECONDS.",
        lambda q: q.unapplied_older_than_threshold,
    ),
    (
        "casework_applications_failed",
        "Decisions whose effect failed for good and wait for a person.",
        lambda q: q.failed,
    ),
)


def figure_families(figures: Figures) -> list[Metric]:
    """The database figures as Prometheus gauges (names are part of the contract)."""

    def gauge(
        name: str, documentation: str, labels: list[str], samples: Iterable[tuple[list[str], float]]
    ) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, documentation, labels=labels)
        for label_values, value in samples:
            family.add_metric(label_values, value)
        return family

    return [
        *(
            gauge(name, help_, ["queue"], (([q.queue], figure(q)) for q in figures.queues))
            for name, help_, figure in _QUEUE_GAUGES
        ),
        gauge(
            "casework_exceptions_open",
            "Exceptions not closed.",
            ["workflow", "reason"],
            (([r.workflow, r.reason], r.open) for r in figures.reasons),
        ),
        gauge(
            "casework_exceptions_overdue",
            "Exceptions waiting for review past their due time.",
            ["workflow"],
            (([w.workflow], w.overdue) for w in figures.workflows),
        ),
    ]


class _Scrape:
    """A collector of one scrape: the processes' metrics, then the database figures."""

    def __init__(self, processes: Collector, figures: Figures | None) -> None:
        self._processes = processes
        self._figures = figures

    def collect(self) -> Iterable[Metric]:
        yield from self._processes.collect()
        if self._figures is not None:
            yield from figure_families(self._figures)


class MetricsEndpoint:
    def __init__(
        self,
        settings: Settings,
        db: Callable[[], Database],
        tokens: Callable[[], CredentialResolver],
        *,
        merged_metrics_dir: Path | None = None,
    ) -> None:
        """merged_metrics_dir: where every serving process keeps its metric files
        (prometheus-client's multiprocess mode); None serves this process's registry."""
        self._settings = settings
        self._db = db
        self._tokens = tokens
        self._processes: Collector = (
            REGISTRY
            if merged_metrics_dir is None
            # registry=None: read at each scrape, registered nowhere.
            else MultiProcessCollector(None, path=str(merged_metrics_dir))  # type: ignore[no-untyped-call]
        )
        self._reading: asyncio.Task[Figures | None] | None = None

    async def scrape(self, request: Request) -> Response:
        if not self._settings.metrics_public:
            refusal = await self._refusal(request.headers.get("authorization"))
            if refusal is not None:
                return refusal
        if self._reading is None or self._reading.done():
            self._reading = asyncio.create_task(self._read_figures())
        figures = await asyncio.shield(self._reading)
        return Response(
            generate_latest(_Scrape(self._processes, figures)), media_type=CONTENT_TYPE_LATEST
        )

    async def _refusal(self, authorization: str | None) -> Response | None:
        try:
            principal = await self._tokens().resolve(Credentials.of(authorization))
        except Exception as error:
            if not is_unavailable(error):
                raise
            return JSONResponse(
                error_body(ErrorCode.UNAVAILABLE, "the database is unavailable"),
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if principal is None:
            log.info("metrics: refused a scrape without a valid bearer token")
            return JSONResponse(
                error_body(
                    ErrorCode.UNAUTHENTICATED, "a manager or admin bearer token is required"
                ),
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if principal.role not in SCRAPING_ROLES or principal.queues:
            log.info("metrics: refused a scrape by %s (%s)", principal.user, principal.role.value)
            return JSONResponse(
                error_body(
                    ErrorCode.FORBIDDEN,
                    "metrics cover every queue: a manager or admin token for all queues",
                ),
                status_code=403,
            )
        return None

    async def _read_figures(self) -> Figures | None:
        try:
            return await read_figures(
                self._db(),
                max_age_seconds=self._settings.metrics_cache_seconds,
                unapplied_threshold_seconds=self._settings.metrics_unapplied_threshold_seconds,
            )
        except Exception as error:
            if not is_unavailable(error):
                raise
            log.warning("metrics: the database figures are left out: %r", error)
            return None
