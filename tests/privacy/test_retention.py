"""Retention under a frozen clock: the worker erases exactly the items whose period ended,
by each anchor, and carries out deferred erasure requests once nothing holds them."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.domain.privacy.erasure import ErasureRequest, approve_erasure, request_erasure
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.domain.privacy.receipts import ErasureDeferred, ErasureReceipt
from server.domain.privacy.retention import RelationshipEnded, report_relationship_ended
from server.retention_worker import RetentionWorker
from server.store.database import Database
from tests.conftest import INTEGRATION
from tests.privacy.conftest import attach_policy
from tests.privacy.erasure_helpers import (
    CARL,
    CORA,
    decide_next,
    enqueue,
    fields_of,
    log_actions,
    utcnow,
)
from tests.privacy.erasure_helpers import add_retention_class as add_class

DAY = 24 * 3600


@pytest.fixture
def ledger(tmp_path: Path) -> ErasureLedger:
    return ErasureLedger(tmp_path / "erasure-ledger.jsonl")


async def erased(conn: asyncpg.Connection, item_id: int) -> bool:
    fields = await fields_of(conn, item_id)
    states = {
        f["erased_at"] is not None
        for p, f in fields.items()
        if f["class"] != "public" and f["class"] != "reference"
    }
    assert len(states) == 1, fields
    return states.pop()


async def created_at(conn: asyncpg.Connection, item_id: int) -> object:
    return await conn.fetchval("SELECT created_at FROM review_items WHERE id = $1", item_id)


async def test_each_anchor_erases_exactly_the_expired_items(
    db: Database,
    kyc_queue: str,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await add_class(owner_conn, "enqueued-1d", DAY, "enqueued", basis="one day from enqueue")
    await add_class(owner_conn, "decided-1d", DAY, "decided", basis="one day from decision")
    await add_class(owner_conn, "ended-1d", DAY, "relationship_ended", basis="one day after")
    await attach_policy(db, kyc_queue, retention_class="enqueued-1d")
    enqueued = await enqueue(db, keyring, "e-1", "cust-e", 1)
    await attach_policy(db, kyc_queue, retention_class="decided-1d")
    decided = await enqueue(db, keyring, "d-1", "cust-d", 2)
    undecided = await enqueue(db, keyring, "d-2", "cust-d", 3)
    await attach_policy(db, kyc_queue, retention_class="ended-1d")
    ended = await enqueue(db, keyring, "r-1", "cust-r", 4)
    unreported = await enqueue(db, keyring, "r-2", "cust-u", 5)
    await attach_policy(db, kyc_queue)  # no class: kept until a request
    unclassed = await enqueue(db, keyring, "n-1", "cust-n", 6)
    # Items are claimed oldest first: the first two claims take e-1 and d-1.
    await decide_next(db)
    await decide_next(db)
    reported = await report_relationship_ended(db, INTEGRATION, "cust-r", utcnow())
    assert isinstance(reported, RelationshipEnded)
    worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
    start = await created_at(owner_conn, enqueued.id)
    assert isinstance(start, type(utcnow()))

    # A second before the enqueue anchor's day ends: nothing.
    nothing = await worker.run_once(now=start + timedelta(seconds=DAY - 1))
    assert (nothing.subjects_erased, nothing.fields_erased) == (0, 0)
    assert not await erased(owner_conn, enqueued.id)

    done = await worker.run_once(now=utcnow() + timedelta(days=2))

    assert (done.subjects_erased, done.fields_erased) == (3, 9)
    assert await erased(owner_conn, enqueued.id)
    assert await erased(owner_conn, decided.id)
    assert await erased(owner_conn, ended.id)
    assert not await erased(owner_conn, undecided.id)
    assert not await erased(owner_conn, unreported.id)
    assert not await erased(owner_conn, unclassed.id)
    # cust-d keeps its key: its undecided item is still sealed under it.
    shredded = await owner_conn.fetch(
        "SELECT subject_ref FROM privacy_subject_keys WHERE shredded_at IS NOT NULL ORDER BY 1"
    )
    assert [r["subject_ref"] for r in shredded] == ["cust-e", "cust-r"]
    assert [(e.subject_ref, e.kind, e.item_ids) for e in ledger.entries()] == [
        ("cust-d", "retention", (decided.id,)),
        ("cust-e", "retention", (enqueued.id,)),
        ("cust-r", "retention", (ended.id,)),
    ]
    assert (await log_actions(owner_conn)).count("retention_erased") == 3
    # Again: nothing more.
    again = await worker.run_once(now=utcnow() + timedelta(days=2))
    assert (again.subjects_erased, again.fields_erased) == (0, 0)
    assert len(list(ledger.entries())) == 3


async def test_a_deferred_request_is_carried_out_when_its_period_ends(
    db: Database,
    kyc_queue: str,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await add_class(owner_conn, "decided-1d", DAY, "decided", basis="one day from decision")
    await attach_policy(db, kyc_queue, retention_class="decided-1d")
    item = await enqueue(db, keyring, "d-1", "cust-1", 1)
    request = await request_erasure(db, CORA, "cust-1", "Art. 17")
    assert isinstance(request, ErasureRequest)
    deferred = await approve_erasure(db, CARL, request.id, keyring, ledger)
    # Not decided: the period has not started, so its end is unknown.
    assert isinstance(deferred, ErasureDeferred)
    assert (deferred.basis, deferred.until) == ("one day from decision", None)
    assert (
        await owner_conn.fetchval(
            "SELECT restricted_at FROM privacy_subjects WHERE subject_ref = 'cust-1'"
        )
        == deferred.restricted_at
    )
    worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
    # Still undecided two days on: nothing happens.
    assert (await worker.run_once(now=utcnow() + timedelta(days=2))).requests_executed == 0
    assert not await erased(owner_conn, item.id)

    await decide_next(db)
    assert (await worker.run_once(now=utcnow() + timedelta(hours=23))).requests_executed == 0
    done = await worker.run_once(now=utcnow() + timedelta(days=2))

    # Retention got there first (the same day ended); the request is carried out all the
    # same, with a receipt naming who asked and who approved.
    assert done.requests_executed == 1
    assert await erased(owner_conn, item.id)
    # Carried out: the restriction of the deferral is lifted (nothing is left to restrict,
    # and new data of a returning subject is not withheld).
    assert (
        await owner_conn.fetchval(
            "SELECT restricted_at FROM privacy_subjects WHERE subject_ref = 'cust-1'"
        )
        is None
    )
    receipt = await approve_erasure(db, CARL, request.id, keyring, ledger)
    assert isinstance(receipt, ErasureReceipt)
    assert (receipt.requested_by, receipt.approved_by) == ("cora-compliance", "carl-compliance")
    outcomes = await owner_conn.fetch(
        "SELECT outcome, decided_by FROM erasure_outcomes ORDER BY id"
    )
    assert [tuple(o) for o in outcomes] == [
        ("deferred", "carl-compliance"),
        ("executed", "casework:retention-worker"),
    ]


async def test_a_deferred_request_waits_for_the_relationship_to_end(
    db: Database,
    kyc_queue: str,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await add_class(owner_conn, "aml-1d", DAY, "relationship_ended", basis="AML")
    await attach_policy(db, kyc_queue, retention_class="aml-1d")
    item = await enqueue(db, keyring, "a-1", "cust-1", 1)
    request = await request_erasure(db, CORA, "cust-1", "Art. 17")
    assert isinstance(request, ErasureRequest)
    assert isinstance(await approve_erasure(db, CARL, request.id, keyring, ledger), ErasureDeferred)
    worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
    assert (await worker.run_once(now=utcnow() + timedelta(days=400))).fields_erased == 0

    ended = utcnow()
    assert isinstance(
        await report_relationship_ended(db, INTEGRATION, "cust-1", ended), RelationshipEnded
    )
    assert (await worker.run_once(now=ended + timedelta(hours=12))).fields_erased == 0
    assert not await erased(owner_conn, item.id)
    done = await worker.run_once(now=ended + timedelta(days=1, seconds=1))
    assert done.fields_erased == 3
    assert await erased(owner_conn, item.id)


async def test_only_the_integration_reports_a_relationship_end(
    db: Database, kyc_policy: object, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(db, keyring, "a-1", "cust-1", 1)
    now = utcnow()
    assert isinstance(await report_relationship_ended(db, CORA, "cust-1", now), NotPermitted)
    future = await report_relationship_ended(db, INTEGRATION, "cust-1", now + timedelta(days=1))
    assert isinstance(future, InvalidInput)
    assert future.field == "at"
    scoped = Principal("payout-provider", Role.INTEGRATION, frozenset({"payouts"}))
    assert await report_relationship_ended(db, scoped, "cust-1", now) == NotFound(
        "subject", "cust-1"
    )
    first = await report_relationship_ended(db, INTEGRATION, "cust-1", now - timedelta(days=3))
    second = await report_relationship_ended(db, INTEGRATION, "cust-1", now - timedelta(days=1))
    assert isinstance(second, RelationshipEnded)
    assert isinstance(first, RelationshipEnded)
    assert second.relationship_ended_at == now - timedelta(days=1)
    logged = await owner_conn.fetch(
        "SELECT detail FROM privacy_log WHERE action = 'relationship_ended' ORDER BY id"
    )
    assert [r["detail"]["replaced"] is None for r in logged] == [True, False]


async def test_the_worker_loop_stops_when_asked(
    db: Database, keyring: Keyring, ledger: ErasureLedger
) -> None:
    worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
    task = asyncio.create_task(worker.run())
    worker.stop()
    await asyncio.wait_for(task, 10)
    assert worker.stats.failures == 0
