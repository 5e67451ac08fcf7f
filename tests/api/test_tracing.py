"""Tracing with the SDK's in-memory exporter: a span per GraphQL operation (Strawberry's
extension), per SQL statement (named by its query), and per effect attempt in the worker,
linked to the request that recorded the decision; off unless OTEL_* asks for it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from server.config import Settings
from server.domain.review.items import NewItem, enqueue_items
from server.observability import tracing
from server.store.database import Database
from tests.api.conftest import SETUP_QUEUES, Tokens, graphql_caller, in_process_client
from tests.api.helpers import decision_input
from tests.conftest import INTEGRATION, TestDatabase

APPLIED_WITHIN_SECONDS = 20.0
CLAIM = """mutation($q: String!) { claimNext(queue: $q) { __typename
  ... on Claim { leaseToken evidenceHash item { id } } } }"""
DECIDE = """mutation($i: SubmitDecisionInput!) { submitDecision(input: $i) {
  __typename ... on DecisionRecorded { decision { id } } } }"""


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracing.use_provider(provider)
    try:
        yield exported
    finally:
        tracing.use_provider(None)


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


async def test_operations_statements_and_effect_attempts_are_spans(
    test_database: TestDatabase, db: Database, tokens: Tokens, exporter: InMemorySpanExporter
) -> None:
    settings = replace(Settings.from_env(), events_transport="memory")
    async with in_process_client(
        test_database, dev=False, settings=settings, run_worker=True
    ) as client:
        gql = graphql_caller(client)
        assert "errors" not in await gql(tokens.admin, SETUP_QUEUES)
        enqueued = await enqueue_items(db, INTEGRATION, "kyc", [NewItem("k1", {"a": 1}, 0)])
        assert isinstance(enqueued, list)
        claim = (await gql(tokens.reviewer, CLAIM, q="kyc"))["data"]["claimNext"]
        decided = await gql(
            tokens.reviewer,
            DECIDE,
            i=decision_input(claim, "APPROVE", "documents_ok"),
        )
        decision_id = int(decided["data"]["submitDecision"]["decision"]["id"])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + APPLIED_WITHIN_SECONDS
        while not named(exporter.get_finished_spans(), "applications_record_applied"):
            assert loop.time() < deadline, "the decision was not applied"
            await asyncio.sleep(0.05)
    spans = exporter.get_finished_spans()

    # The statement that recorded the decision: a span named by its query, inside the
    # submitDecision resolver's span, inside the operation's span.
    [submit] = named(spans, "decision_submit")
    by_id = {span.context.span_id: span for span in spans}
    ancestors = []
    parent = submit.parent
    while parent is not None:
        ancestors.append(by_id[parent.span_id].name)
        parent = by_id[parent.span_id].parent
    assert ancestors == ["GraphQL Resolving: submitDecision", "GraphQL Query"], ancestors
    assert submit.attributes is not None
    assert submit.attributes["db.system"] == "postgresql"

    # The worker's attempt: its own trace, linked to the one that recorded the decision.
    [attempt] = named(spans, "casework.effect_attempt")
    assert attempt.attributes is not None
    assert attempt.attributes["casework.decision.id"] == decision_id
    assert [link.context.trace_id for link in attempt.links] == [submit.context.trace_id]
    assert attempt.context.trace_id != submit.context.trace_id
    [recorded] = named(spans, "applications_record_applied")
    assert recorded.parent is not None
    assert recorded.parent.span_id == attempt.context.span_id

    # No span carries a lease token or a bearer token.
    for span in spans:
        for value in (span.attributes or {}).values():
            assert claim["leaseToken"] not in str(value)
            assert tokens.reviewer not in str(value)


async def test_nothing_is_traced_when_tracing_is_off(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    settings = replace(Settings.from_env(), events_transport="memory")
    assert not tracing.enabled()
    async with in_process_client(test_database, dev=False, settings=settings) as client:
        assert "errors" not in await graphql_caller(client)(tokens.admin, SETUP_QUEUES)
    assert tracing.statement_span("any") is tracing.statement_span("other")
    assert exported.get_finished_spans() == ()
    assert tracing.current_traceparent() is None


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "casework"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, False),
    ],
)
def test_tracing_is_on_only_when_otel_variables_ask(env: dict[str, str], wanted: bool) -> None:
    assert tracing.wanted(env) is wanted


def test_exporters_are_found_by_their_standard_names() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    assert tracing._exporters({"OTEL_TRACES_EXPORTER": "otlp,console"}) == [
        OTLPSpanExporter,
        ConsoleSpanExporter,
    ]
    with pytest.raises(tracing.TracingSetupError, match="no span exporter 'zipkin'"):
        tracing._exporters({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(tracing.TracingSetupError, match="PROTOCOL"):
        tracing._exporters({"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"})
