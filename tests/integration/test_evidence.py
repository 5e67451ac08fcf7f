"""Evidence pinning: a decision must echo the hash of what the reviewer was shown."""

from __future__ import annotations

from dataclasses import replace

import asyncpg

from server.domain.failures import EvidenceChanged
from server.domain.model import Decision, EnqueuedItem
from server.domain.review.decisions import submit_decision
from server.domain.review.evidence import evidence_hash
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION, reviewer
from tests.integration.helpers import (
    claim,
    decide,
    decision_rows,
    enqueue_one,
    item_row,
    verdict_for,
)


async def reenqueue(db: Database, queue: str, key: str, payload: object) -> EnqueuedItem:
    result = await enqueue_items(db, INTEGRATION, queue, [NewItem(key, payload)])
    assert isinstance(result, list), result
    return result[0]


async def test_decision_on_changed_evidence_is_refused_and_writes_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1", {"name": "Ada", "score": 10})
    alice = reviewer("alice")
    held = await claim(db, alice)
    assert held.evidence_hash == item.evidence_hash == evidence_hash({"name": "Ada", "score": 10})

    reupload = await reenqueue(db, kyc_queue, "cust-1", {"name": "Ada", "score": 90})
    assert (reupload.created, reupload.evidence_updated) == (False, True)
    new_hash = evidence_hash({"name": "Ada", "score": 90})
    assert reupload.item.evidence_hash == new_hash

    refused = await submit_decision(db, alice, verdict_for(held))

    assert refused == EvidenceChanged(item.id, new_hash)
    assert await decision_rows(owner_conn, item.id) == []
    row = await item_row(owner_conn, item.id)
    assert (row["state"], row["lease_token"], row["payload"]) == (
        "pending",
        held.lease_token,
        {"name": "Ada", "score": 90},
    )
    # Having seen the new evidence, the same lease may decide on it.
    decided = await submit_decision(db, alice, verdict_for(held, evidence_hash=new_hash))
    assert isinstance(decided, Decision), decided
    assert decided.evidence_hash == new_hash


async def test_token_spelling_does_not_hide_evidence_change(db: Database, kyc_queue: str) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1", {"v": 1})
    alice = reviewer("alice")
    held = await claim(db, alice)
    await reenqueue(db, kyc_queue, "cust-1", {"v": 2})
    # A lease token is a UUID: the claim's token in another accepted spelling is the same token.
    undashed = replace(verdict_for(held), lease_token=held.lease_token.hex)

    assert await submit_decision(db, alice, undashed) == EvidenceChanged(
        item.id, evidence_hash({"v": 2})
    )


async def test_hash_is_canonical_and_identical_reupload_changes_nothing(
    db: Database, kyc_queue: str
) -> None:
    ordered = await enqueue_one(db, kyc_queue, "cust-1", {"a": 1, "b": {"x": "é", "y": [1, 2]}})
    shuffled = await enqueue_one(db, kyc_queue, "cust-2", {"b": {"y": [1, 2], "x": "é"}, "a": 1})
    assert ordered.evidence_hash == shuffled.evidence_hash

    same = await reenqueue(db, kyc_queue, "cust-1", {"b": {"y": [1, 2], "x": "é"}, "a": 1})
    assert (same.created, same.evidence_updated) == (False, False)
    assert same.item.id == ordered.id
    assert same.item.evidence_hash == ordered.evidence_hash


async def test_reenqueue_after_decision_leaves_the_payload_alone(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1", {"name": "Ada"})
    alice = reviewer("alice")
    await decide(db, alice, await claim(db, alice))

    late = await reenqueue(db, kyc_queue, "cust-1", {"name": "Eve"})

    assert (late.created, late.evidence_updated) == (False, False)
    assert late.item.id == item.id
    assert (late.item.payload, late.item.evidence_hash) == ({"name": "Ada"}, item.evidence_hash)
    row = await item_row(owner_conn, item.id)
    assert (row["payload"], row["evidence_hash"], row["state"]) == (
        {"name": "Ada"},
        item.evidence_hash,
        "decided",
    )
