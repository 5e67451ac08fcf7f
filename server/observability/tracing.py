"""Optional OpenTelemetry tracing (`pip install 'casework[otel]'`), off unless the standard
OTEL_* environment variables ask for it.

On when OTEL_TRACES_EXPORTER names an exporter (otlp, console, or any installed one), or
when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
OTEL_SDK_DISABLED=true keeps it off. Everything else (service name and resource, sampler,
batching, the exporter's endpoint, headers and timeouts) the SDK reads from its own OTEL_*
variables. `otlp` means OTLP over HTTP/protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL says grpc
(then opentelemetry-exporter-otlp-proto-grpc must be installed).

Spans: one per GraphQL operation and resolver (Strawberry's extension, added by the schema
when tracing is on), one per SQL statement named by the query's name (server/store/
database.py), and one per effect attempt in the worker, linked to the span of the request
that recorded the decision (its traceparent is stored with the decision).

Off, every hook here is a check of one module variable: the hot path pays nothing else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer, TracerProvider

SERVICE_NAME = "casework"
EXPORTER_ENTRY_POINTS = "opentelemetry_traces_exporter"
_OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}

_provider: TracerProvider | None = None
_tracer: Tracer | None = None
_NO_SPAN: contextlib.nullcontext[None] = contextlib.nullcontext()


class TracingSetupError(ValueError):
    """OTEL_* asks for tracing that cannot be set up; the CLI prints it as one line."""


def wanted(env: Mapping[str, str]) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return exporters != "none"
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure_tracing(env: Mapping[str, str] = os.environ) -> bool:
    """Sets up the SDK from the environment when it asks for tracing; True if it did."""
    if not wanted(env):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        raise TracingSetupError(
            f"OTEL_* asks for traces but the OpenTelemetry SDK is not installed ({error}); "
            "install casework[otel]"
        ) from error
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; without either
    # the service is "unknown_service:python", and Casework names itself instead.
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    for exporter in _exporters(env):
        provider.add_span_processor(BatchSpanProcessor(exporter()))
    trace.set_tracer_provider(provider)
    use_provider(provider)
    return True


def _exporters(env: Mapping[str, str]) -> list[type[SpanExporter]]:
    names = [name.strip() for name in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    found = []
    for name in filter(None, names):
        if name == "otlp":
            if protocol not in _OTLP_BY_PROTOCOL:
                raise TracingSetupError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not known")
            name = _OTLP_BY_PROTOCOL[protocol]
        points = entry_points(group=EXPORTER_ENTRY_POINTS, name=name)
        if not points:
            raise TracingSetupError(
                f"OTEL_TRACES_EXPORTER: no span exporter {name!r} is installed"
                + (" (install opentelemetry-exporter-otlp-proto-grpc)" if "grpc" in name else "")
            )
        found.append(next(iter(points)).load())
    return found


def use_provider(provider: TracerProvider | None) -> None:
    """Turns tracing on with this provider (None: off). Tests pass one with an in-memory
    exporter; configure_tracing passes the SDK's."""
    global _provider, _tracer
    _provider = provider
    _tracer = None if provider is None else provider.get_tracer("casework")


def provider() -> TracerProvider | None:
    return _provider


def enabled() -> bool:
    return _tracer is not None


def statement_span(name: str) -> contextlib.AbstractContextManager[Any]:
    """A span around one SQL statement, named by its query's name (never its text)."""
    if _tracer is None:
        return _NO_SPAN
    from opentelemetry.trace import SpanKind

    return _tracer.start_as_current_span(
        name, kind=SpanKind.CLIENT, attributes={"db.system": "postgresql", "db.query.name": name}
    )


def current_traceparent() -> str | None:
    """The W3C traceparent of the running span, to store with what it records."""
    if _tracer is None:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent")


@contextlib.contextmanager
def effect_span(
    name: str, *, decision_id: int, attempt: int, traceparent: str | None
) -> Iterator[None]:
    """A span for one attempt at a decision's effect, linked to the recording request's."""
    if _tracer is None:
        yield
        return
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    links = []
    if traceparent:
        recorded = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
        context = trace.get_current_span(recorded).get_span_context()
        if context.is_valid:
            links.append(Link(context))
    attributes = {"casework.decision.id": decision_id, "casework.attempt": attempt}
    with _tracer.start_as_current_span(
        name, kind=SpanKind.CLIENT, links=links, attributes=attributes
    ):
        yield
