"""The per-process metrics, on prometheus-client's default registry.

Under `casework serve --workers N` (N > 1) the values live in prometheus-client's
per-process files instead, and a scrape of any process serves their merge
(server/metrics_endpoint.py).

Counters and histograms count what this process did; the database figures (backlogs, the
unapplied and failed applications, open exceptions) are the same for every process and
are read at scrape time (server/metrics_endpoint.py). Label values are bounded: queues
come from decision rows (so from the catalogue), verdicts and outcomes from enums, GraphQL
fields from the schema, never from what a client typed.
"""

from __future__ import annotations

import enum
import functools

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# The `_created` series double every counter for a figure no dashboard here uses.
disable_created_metrics()  # type: ignore[no-untyped-call]

DECISIONS = Counter(
    "casework_decisions", "Decisions recorded by this process.", ("queue", "verdict")
)
STALE_LEASE_REFUSALS = Counter(
    "casework_stale_lease_refusals",
    "submitDecision refusals because the lease no longer held (StaleLease).",
    ("queue",),
)
LEASE_COUNT_AT_DECISION = Histogram(
    "casework_lease_count_at_decision",
    "How many leases an item had had when it was decided (1: decided at the first claim).",
    buckets=(1, 2, 3, 4, 5),
)
DECISION_HANDLING_SECONDS = Histogram(
    "casework_decision_handling_seconds",
    "Seconds from the claim of the lease a verdict was made under to the verdict.",
    ("queue",),
    buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600),
)
APPLY_ATTEMPTS = Counter(
    "casework_apply_attempts",
    "Attempts at carrying a decision out, by what came of them.",
    ("outcome",),
)
EVENT_DELIVERIES = Counter(
    "casework_event_deliveries",
    "Attempts at delivering an event to a webhook endpoint, by what came of them.",
    ("outcome",),
)
ENDPOINTS_DISABLED = Counter(
    "casework_webhook_endpoints_disabled",
    "Webhook endpoints disabled by this process, by why (gone: the receiver answered 410).",
    ("reason",),
)
# `casework intake` (server/intake): sources are the [[source]] names of its configuration.
INTAKE_MESSAGES = Counter(
    "casework_intake_messages",
    "Dead letters taken by casework intake, by source and what became of them.",
    ("source", "outcome"),
)
GRAPHQL_OPERATION_SECONDS = Histogram(
    "casework_graphql_operation_seconds",
    "Queries and mutations, from the request to the answer, by operation type and root field.",
    ("type", "field"),
)


@functools.cache
def operation_seconds(kind: str, field: str) -> Histogram:
    """GRAPHQL_OPERATION_SECONDS of one type and root field. `labels` takes a lock and
    checks its arguments on every call; the pairs are bounded (names of the schema)."""
    return GRAPHQL_OPERATION_SECONDS.labels(kind, field)


# multiprocess_mode says how `casework serve --workers N` (N > 1) merges a gauge across its
# processes (prometheus-client's multiprocess mode; one process ignores it): open sockets and
# subscriptions add up over the live processes; the listener gauge is their minimum, so that
# it reads 0 while any process has lost its listener, as with one process.
WEBSOCKET_CONNECTIONS = Gauge(
    "casework_websocket_connections", "Open GraphQL websockets.", multiprocess_mode="livesum"
)
SUBSCRIPTIONS = Gauge(
    "casework_subscriptions",
    "Running subscriptions, by root field.",
    ("field",),
    multiprocess_mode="livesum",
)
# Multiplexed subscriptions (server/graphql/multiplex.py): one execution per event for all
# the subscriptions of a group, whatever their number.
SHARED_EXECUTIONS = Counter(
    "casework_shared_subscription_executions",
    "Executions of a shared subscription's selection (one per event per group), by root field.",
    ("field",),
)
SHARED_GROUPS = Gauge(
    "casework_shared_subscription_groups",
    "Groups of subscriptions executed once for all their members.",
    multiprocess_mode="livesum",
)
LISTENER_CONNECTED = Gauge(
    "casework_listener_connected",
    "1 while this process's hint listener (PostgreSQL LISTEN or Redis) is connected.",
    multiprocess_mode="livemin",
)
LISTENER_RECONNECTS = Counter(
    "casework_listener_reconnects", "Times the hint listener came back after a loss."
)
# The read replica (CASEWORK_READ_DATABASE_URL; server/store/replica_lag.py): series only
# where one is configured, labelled with its host:port/database. Every process measures the
# same replica; the merge keeps the worst.
READ_REPLICA_LAG_SECONDS = Gauge(
    "casework_read_replica_lag_seconds",
    "How old the read replica's data may be, at the last lag check: the time since the "
    "primary's newest WAL position the replica has replayed. Grows while it is unreachable.",
    ("replica",),
    multiprocess_mode="livemax",
)
READ_REPLICA_UP = Gauge(
    "casework_read_replica_up",
    "1 while the read replica answered the last lag check (reads may go to it within "
    "CASEWORK_READ_MAX_LAG_SECONDS), 0 while reads go to the primary because it did not.",
    ("replica",),
    multiprocess_mode="livemin",
)


class ApplyOutcome(enum.StrEnum):
    APPLIED = "applied"
    # Another attempt (a lapsed lock, a concurrent worker) had recorded it already.
    ALREADY_APPLIED = "already_applied"
    # Failed; another attempt will be made.
    RETRIED = "retried"
    # Failed for good (permanent, or the last attempt allowed): a person takes it over.
    FAILED = "failed"


class EventDeliveryOutcome(enum.StrEnum):
    DELIVERED = "delivered"
    # Failed; another attempt will be made.
    RETRIED = "retried"
    # Failed for good (a 4xx, or the last attempt of its round): an admin may replay it.
    FAILED = "failed"
    # The receiver answered 410 Gone: the endpoint is disabled, the delivery waits.
    GONE = "gone"


class IntakeOutcome(enum.StrEnum):
    """What became of a dead letter `casework intake` took."""

    # An exception raised (or a recurrence of the open one for its record counted).
    RAISED = "raised"
    # A review item enqueued (or the one with its key given the new evidence).
    ENQUEUED = "enqueued"
    # Taken before: only its acknowledgement had been lost; acknowledged again.
    REPEATED = "repeated"
    # Could not be mapped: moved to the parking queue with the reason.
    PARKED = "parked"


def record_decision(
    queue: str, verdict: str, *, lease_count: int | None, handling_seconds: float | None
) -> None:
    DECISIONS.labels(queue, verdict).inc()
    if lease_count is not None:
        LEASE_COUNT_AT_DECISION.observe(lease_count)
    if handling_seconds is not None:
        DECISION_HANDLING_SECONDS.labels(queue).observe(max(0.0, handling_seconds))


def record_stale_lease(queue: str) -> None:
    STALE_LEASE_REFUSALS.labels(queue).inc()


def record_apply_attempt(outcome: ApplyOutcome) -> None:
    APPLY_ATTEMPTS.labels(outcome.value).inc()


def record_event_delivery(outcome: EventDeliveryOutcome) -> None:
    EVENT_DELIVERIES.labels(outcome.value).inc()


def record_endpoint_disabled_by_receiver() -> None:
    ENDPOINTS_DISABLED.labels("gone").inc()


def listener_connected(connected: bool) -> None:
    LISTENER_CONNECTED.set(1 if connected else 0)


def listener_reconnected() -> None:
    LISTENER_RECONNECTS.inc()


def record_intake(source: str, outcome: IntakeOutcome) -> None:
    INTAKE_MESSAGES.labels(source, outcome.value).inc()
