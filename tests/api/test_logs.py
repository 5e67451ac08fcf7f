"""Log lines of a real `casework serve` with CASEWORK_LOG_FORMAT=json: every line one JSON
object with time, level, logger and message; a request id per HTTP request and websocket
operation, returned to the caller and carried by every line the request causes; one
access line per GraphQL operation, never the token; a refused request is that one line;
the worker's line about a decision carries the decision id the access line names."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import httpx

from server.domain.model import EffectKind, Verdict
from server.domain.review.queues import Effect, QueueSettings, configure_queue, define_reason_code
from server.observability.context import REQUEST_ID
from server.observability.logs import ContextFilter, JsonFormatter, TextFormatter
from server.signatures import new_secret
from server.store.database import Database
from tests.api.helpers import decision_input
from tests.conftest import ADMIN, TestDatabase
from tests.live.helpers import (
    QUEUE_BACKLOG,
    Casework,
    create_live_tokens,
    serve_casework,
)
from tests.live.wsclient import graphql_socket

Line = dict[str, Any]
CLAIM = """mutation { claimNext(queue: "kyc") {
  __typename ... on Claim { leaseToken evidenceHash item { id } } } }"""
DECIDE = """mutation($i: SubmitDecisionInput!) { submitDecision(input: $i) {
  __typename ... on DecisionRecorded { decision { id } } } }"""
LINES_WITHIN_SECONDS = 20.0
# The queue's webhook points outside the allow-list serve runs with: the worker refuses
# to send it, and logs one line about the decision.
ALLOWED_HOST = "receiver.example"


def lines_of(casework: Casework) -> list[Line]:
    return [json.loads(line) for line in casework.log if line.strip()]


async def until(casework: Casework, found: Callable[[list[Line]], bool]) -> list[Line]:
    """Polls the process's log (a real condition, with a deadline) until `found` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LINES_WITHIN_SECONDS
    while not found(lines := lines_of(casework)):
        assert loop.time() < deadline, "\n".join(casework.log)
        await asyncio.sleep(0.05)
    return lines


def access(lines: list[Line], request_id: str) -> list[Line]:
    return [
        line
        for line in lines
        if line.get("request_id") == request_id and line["logger"] == "casework.access"
    ]


async def post(
    client: httpx.AsyncClient, token: str, query: str, request_id: str | None, **variables: Any
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if request_id is not None:
        headers["X-Request-ID"] = request_id
    return await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=headers
    )


async def test_json_lines_request_ids_and_access_lines(
    test_database: TestDatabase, db: Database, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    queue = await configure_queue(
        db,
        ADMIN,
        QueueSettings(
            "kyc", effect=Effect(EffectKind.WEBHOOK, "http://other.example/", new_secret())
        ),
    )
    assert not hasattr(queue, "message"), queue
    await define_reason_code(
        db, ADMIN, queue="kyc", code="documents_ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    async with serve_casework(
        test_database,
        CASEWORK_LOG_FORMAT="json",
        CASEWORK_EFFECT_ALLOWED_HOSTS=ALLOWED_HOST,
    ) as casework:
        client = casework.api.client
        await casework.api.enqueue(tokens.integration, "kyc", {"k1": {"a": 1}})
        claimed = await post(client, tokens.rita, CLAIM, "claim-1")
        claim = claimed.json()["data"]["claimNext"]
        decided = await post(
            client,
            tokens.rita,
            DECIDE,
            None,
            i=decision_input(claim, "APPROVE", "documents_ok"),
        )
        decision_id = int(decided.json()["data"]["submitDecision"]["decision"]["id"])
        refused = await post(client, "not-a-token", CLAIM, "refused-1")
        bad_syntax = await post(client, tokens.rita, "mutation { claimNext(", "syntax-1")
        unplain = await post(client, tokens.rita, CLAIM, "two words")
        # Its one item is decided: the queue is empty, an expected failure (a union member).
        empty = await post(client, tokens.rita, CLAIM, "error-member-1")

        async with graphql_socket(casework.url, tokens.rita) as socket:
            operation = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            await socket.next(operation)
            await socket.complete(operation)
            lines = await until(
                casework,
                lambda lines: (
                    any(line.get("transport") == "websocket" for line in lines)
                    and any(line.get("decision_id") == decision_id for line in lines)
                ),
            )
    lines = lines_of(casework)

    # Every line: one JSON object with the four keys, whoever logged it (uvicorn too).
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert any(line["logger"].startswith("uvicorn") for line in lines)
    text = "\n".join(casework.log)
    for secret in (tokens.rita, tokens.integration, claim["leaseToken"], "not-a-token"):
        assert secret not in text

    # The caller's id comes back, and its request's one access line carries it.
    assert claimed.headers["x-request-id"] == "claim-1"
    [claim_line] = access(lines, "claim-1")
    assert claim_line["operation_type"] == "mutation"
    assert claim_line["root_fields"] == ["claimNext"]
    assert claim_line["outcome"] == "ok"
    assert (claim_line["user"], claim_line["role"]) == ("rita", "reviewer")
    assert claim_line["duration_ms"] > 0

    # Without an id one is made, returned, and carried; the decision is named.
    generated = decided.headers["x-request-id"]
    [decide_line] = access(lines, generated)
    assert decide_line["decision_ids"] == [decision_id]
    assert decide_line["root_fields"] == ["submitDecision"]

    # A refused request is its one line, without a traceback.
    for response, request_id, status in (
        (refused, "refused-1", 401),
        (bad_syntax, "syntax-1", 200),
    ):
        assert response.headers["x-request-id"] == request_id
        assert response.status_code == status, response.text
        [only] = [line for line in lines if line.get("request_id") == request_id]
        assert only["outcome"] == "refused", only
        assert "exception" not in only
    assert access(lines, "refused-1")[0]["status"] == 401

    # An id with a space would be a way to forge log fields: replaced, not echoed.
    assert unplain.headers["x-request-id"] != "two words"
    assert len(access(lines, unplain.headers["x-request-id"])) == 1
    assert empty.json()["data"]["claimNext"]["__typename"] == "QueueEmpty"
    [empty_line] = access(lines, "error-member-1")
    assert (empty_line["outcome"], empty_line["error_members"]) == ("error_member", ["QueueEmpty"])

    # A websocket operation: the socket's id and the operation's, its own access line.
    [ws_line] = [line for line in lines if line.get("transport") == "websocket"]
    assert ws_line["request_id"].endswith(f":{operation}")
    assert ws_line["operation_type"] == "subscription"
    assert ws_line["root_fields"] == ["queueBacklog"]
    assert (ws_line["user"], ws_line["outcome"]) == ("rita", "ok")

    # The worker's line about the decision carries its id: the join key to decide_line.
    [worker_line] = [line for line in lines if line.get("decision_id") == decision_id]
    assert worker_line["level"] == "ERROR"
    assert worker_line["logger"] == "casework.worker"
    assert f"decision {decision_id} could not be carried out" in worker_line["message"]


def test_a_text_line_has_time_level_logger_and_ids() -> None:
    record = logging.LogRecord(
        "casework.worker", logging.WARNING, __file__, 1, "a %s", ("b",), None
    )
    token = REQUEST_ID.set("req-9")
    try:
        ContextFilter().filter(record)
    finally:
        REQUEST_ID.reset(token)
    line = TextFormatter().format(record)
    stamp, level, logger, ids, message = line.split(" ", 4)
    assert stamp.endswith("+00:00")
    assert "T" in stamp
    assert (level, logger, ids, message) == ("WARNING", "casework.worker", "[request=req-9]", "a b")


def test_a_json_line_is_one_object_with_the_traceback_inside() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "casework", logging.ERROR, __file__, 1, "failed", None, sys.exc_info()
        )
    ContextFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "failed"
    assert "ValueError: boom" in parsed["exception"]
    assert "request_id" not in parsed
