"""Malformed or impossible input gets a typed answer naming the problem, and writes nothing.

Each test checks a family of bad values against one cloned database and reports every
value that was not refused as expected, so one run shows the whole picture.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import asyncpg
import pytest

from server.domain.failures import InvalidInput, InvalidReasonCode
from server.domain.model import Claim, EnqueuedItem, Queue, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision, submit_decision
from server.domain.review.evidence import MAX_PAYLOAD_BYTES, canonical_json
from server.domain.review.items import MAX_BATCH, NewItem, enqueue_items
from server.domain.review.leases import claim_next, release_lease, renew_lease
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, reviewer
from tests.integration.helpers import claim, decide, enqueue_one, snapshot, verdict_for

ALICE = reviewer("alice")


def refusal(result: object) -> tuple[str, str | None]:
    return type(result).__name__, getattr(result, "field", None)


def sized_payload(size: int) -> dict[str, str]:
    """A payload whose canonical form is exactly `size` bytes."""
    overhead = len(canonical_json({"blob": ""}))
    payload = {"blob": "x" * (size - overhead)}
    assert len(canonical_json(payload)) == size
    return payload


@pytest.fixture
async def held(db: Database, kyc_queue: str) -> Claim:
    await enqueue_one(db, kyc_queue, "cust-1")
    return await claim(db, ALICE)


async def test_claim_in_an_unknown_queue(db: Database, kyc_queue: str) -> None:
    result = await claim_next(db, reviewer("alice", "no-such-queue"), "no-such-queue")

    assert result == InvalidInput("unknown queue 'no-such-queue'", "queue")


async def test_malformed_ids(db: Database, held: Claim, owner_conn: asyncpg.Connection) -> None:
    before = await snapshot(owner_conn)
    token = str(held.lease_token)
    refused: dict[str, list[tuple[str, str | None]]] = {}
    bad_ids = ["abc", "-1", "", "0", "1.5", " 1", "\u0661", "99999999999999999999"]

    for bad_id in bad_ids:
        refused[bad_id] = [
            refusal(await submit_decision(db, ALICE, replace(verdict_for(held), item_id=bad_id))),
            refusal(await renew_lease(db, ALICE, bad_id, token)),
            refusal(await release_lease(db, ALICE, bad_id, token)),
            refusal(await overturn_decision(db, APPROVER, OverturnInput(bad_id, "name_mismatch"))),
        ]

    expected = [("InvalidInput", "itemId")] * 3 + [("InvalidInput", "decisionId")]
    assert refused == dict.fromkeys(bad_ids, expected)
    assert await snapshot(owner_conn) == before


async def test_ids_that_name_nothing(db: Database, held: Claim) -> None:
    missing = str(held.item.id + 1000)

    decided = await submit_decision(db, ALICE, replace(verdict_for(held), item_id=missing))
    overturned = await overturn_decision(db, APPROVER, OverturnInput(missing, "name_mismatch"))

    assert decided == InvalidInput(f"no item with id {missing}", "itemId")
    assert overturned == InvalidInput(f"no decision with id {missing}", "decisionId")


async def test_malformed_lease_token(
    db: Database, held: Claim, owner_conn: asyncpg.Connection
) -> None:
    before = await snapshot(owner_conn)
    item_id = str(held.item.id)
    bad_tokens = ["", "not-a-token", "1234", str(10**40), str(held.lease_token) + "0"]
    refused: dict[str, list[object]] = {}

    for bad_token in bad_tokens:
        refused[bad_token] = [
            await submit_decision(db, ALICE, replace(verdict_for(held), lease_token=bad_token)),
            await renew_lease(db, ALICE, item_id, bad_token),
            await release_lease(db, ALICE, item_id, bad_token),
        ]

    expected = [InvalidInput("leaseToken is not a lease token", "leaseToken")] * 3
    assert refused == dict.fromkeys(bad_tokens, expected)
    assert await snapshot(owner_conn) == before


async def test_payload_at_the_limit_is_accepted(db: Database, kyc_queue: str) -> None:
    result = await enqueue_items(
        db, INTEGRATION, kyc_queue, [NewItem("big", sized_payload(MAX_PAYLOAD_BYTES))]
    )

    assert isinstance(result, list), result
    assert [entry.created for entry in result] == [True]


async def test_oversized_payload_refuses_the_whole_batch(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    items = [
        NewItem("ok-1", {"name": "Ada"}),
        NewItem("too-big", sized_payload(MAX_PAYLOAD_BYTES + 1)),
        NewItem("ok-2", {"name": "Eve"}),
    ]

    refused = await enqueue_items(db, INTEGRATION, kyc_queue, items)

    assert isinstance(refused, InvalidInput), refused
    assert refused.field == "items[1].payload"
    assert f"is {MAX_PAYLOAD_BYTES + 1} bytes" in refused.message
    assert "the limit is 65536 bytes (64 KiB)" in refused.message
    assert await owner_conn.fetchval("SELECT count(*) FROM review_items") == 0


async def test_refused_batches_insert_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    valid = NewItem("ok", {"name": "Ada"})
    batches: dict[str, tuple[list[NewItem], str]] = {
        "list payload": ([valid, NewItem("bad", [1, 2])], "items[1].payload"),
        "string payload": ([valid, NewItem("bad", "text")], "items[1].payload"),
        "number payload": ([valid, NewItem("bad", 42)], "items[1].payload"),
        "null payload": ([valid, NewItem("bad", None)], "items[1].payload"),
        "NaN in payload": ([valid, NewItem("bad", {"s": float("nan")})], "items[1].payload"),
        "empty batch": ([], "items"),
        "batch too large": ([NewItem(f"k{n}", {}) for n in range(MAX_BATCH + 1)], "items"),
        "empty key": ([valid, NewItem("", {})], "items[1].externalKey"),
        "key too long": ([valid, NewItem("k" * 201, {})], "items[1].externalKey"),
        "priority": ([valid, NewItem("p", {}, priority=1_000_001)], "items[1].priority"),
        "duplicate key": ([valid, NewItem("x", {}), NewItem("ok", {})], "items[2].externalKey"),
    }
    refused: dict[str, tuple[str, str | None]] = {}

    for case, (items, _) in batches.items():
        refused[case] = refusal(await enqueue_items(db, INTEGRATION, kyc_queue, items))

    assert refused == {case: ("InvalidInput", field) for case, (_, field) in batches.items()}
    assert await owner_conn.fetchval("SELECT count(*) FROM review_items") == 0


async def test_duplicate_key_is_named(db: Database, kyc_queue: str) -> None:
    items = [NewItem("cust-1", {"v": 1}), NewItem("cust-2", {}), NewItem("cust-1", {"v": 2})]

    refused = await enqueue_items(db, INTEGRATION, kyc_queue, items)

    assert refused == InvalidInput(
        "items[2].externalKey 'cust-1' appears twice in this batch", "items[2].externalKey"
    )


async def test_enqueue_into_an_unknown_queue(db: Database, kyc_queue: str) -> None:
    result = await enqueue_items(db, INTEGRATION, "no-such-queue", [NewItem("k", {})])

    assert result == InvalidInput("unknown queue 'no-such-queue'", "queue")


async def test_reason_code_outside_the_catalogue_for_the_verdict(
    db: Database, held: Claim, owner_conn: asyncpg.Connection
) -> None:
    before = await snapshot(owner_conn)
    wrong = [
        (Verdict.APPROVE, "name_mismatch"),
        (Verdict.REJECT, "documents_ok"),
        (Verdict.ESCALATE, "documents_ok"),
        (Verdict.APPROVE, "no_such_code"),
        (Verdict.APPROVE, ""),
    ]
    results: list[Any] = []

    for verdict, code in wrong:
        results.append(await submit_decision(db, ALICE, verdict_for(held, verdict, code)))

    assert results == [InvalidReasonCode("kyc", code, verdict.name) for verdict, code in wrong]
    assert await snapshot(owner_conn) == before
    # The lease survives refused verdicts.
    await decide(db, ALICE, held)


# The migrations seed the queues of the apply_decision workflow; these are the others.
USER_QUEUES = "SELECT count(*) FROM queues WHERE name NOT LIKE 'apply\\_decision%'"


async def test_bad_queue_names(db: Database, owner_conn: asyncpg.Connection) -> None:
    names = ["", "KYC", "-kyc", ".kyc", "kyc queue", "kyc/senior", "k" * 64, "ключ", "kyc\n"]
    refused: dict[str, tuple[str, str | None]] = {}

    for name in names:
        refused[name] = refusal(await configure_queue(db, ADMIN, QueueSettings(name)))

    assert refused == dict.fromkeys(names, ("InvalidInput", "name"))
    assert await owner_conn.fetchval(USER_QUEUES) == 0
    assert isinstance(await configure_queue(db, ADMIN, QueueSettings("k" * 63)), Queue)


async def test_bad_queue_settings(db: Database, owner_conn: asyncpg.Connection) -> None:
    settings = {
        "leaseTtlSeconds": [
            QueueSettings("aml", lease_ttl_seconds=0),
            QueueSettings("aml", lease_ttl_seconds=86401),
        ],
        "maxAbandons": [
            QueueSettings("aml", max_abandons=0),
            QueueSettings("aml", max_abandons=101),
        ],
        "escalationPriorityBoost": [
            QueueSettings("aml", escalation_priority_boost=-1),
            QueueSettings("aml", escalation_priority_boost=1_000_001),
        ],
        "escalationQueue": [QueueSettings("aml", escalation_queue="no-such-queue")],
    }
    refused: dict[str, list[tuple[str, str | None]]] = {}

    for field, attempts in settings.items():
        refused[field] = [refusal(await configure_queue(db, ADMIN, s)) for s in attempts]

    assert refused == {
        field: [("InvalidInput", field)] * len(attempts) for field, attempts in settings.items()
    }
    assert await owner_conn.fetchval(USER_QUEUES) == 0


async def test_bad_reason_codes(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    before = await snapshot(owner_conn)
    attempts: dict[str, tuple[str, str, list[Verdict], str]] = {
        "empty code": ("", "x", [Verdict.APPROVE], "code"),
        "space in code": ("bad code", "x", [Verdict.APPROVE], "code"),
        "newline after code": ("ok\n", "x", [Verdict.APPROVE], "code"),
        "leading underscore": ("_ok", "x", [Verdict.APPROVE], "code"),
        "blank label": ("ok", "  ", [Verdict.APPROVE], "label"),
        "long label": ("ok", "x" * 201, [Verdict.APPROVE], "label"),
        "no verdict": ("ok", "x", [], "verdicts"),
        "unknown queue": ("ok", "x", [Verdict.APPROVE], "queue"),
    }
    refused: dict[str, tuple[str, str | None]] = {}

    for case, (code, label, verdicts, _) in attempts.items():
        queue = "no-such-queue" if case == "unknown queue" else kyc_queue
        result = await define_reason_code(
            db, ADMIN, queue=queue, code=code, label=label, verdicts=verdicts
        )
        refused[case] = refusal(result)

    assert refused == {case: ("InvalidInput", a[3]) for case, a in attempts.items()}
    assert await snapshot(owner_conn) == before


async def test_reenqueue_returns_the_existing_item(db: Database, kyc_queue: str) -> None:
    first = await enqueue_items(db, INTEGRATION, kyc_queue, [NewItem("cust-1", {})])
    again = await enqueue_items(db, INTEGRATION, kyc_queue, [NewItem("cust-1", {})])

    assert isinstance(first, list)
    assert again == [EnqueuedItem(first[0].item, created=False, evidence_updated=False)]
