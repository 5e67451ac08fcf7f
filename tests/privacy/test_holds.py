"""Holds: placed and released by compliance only, append-only, logged; nothing under a live
hold is erased, by retention or by request, and a held erasure changes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.domain.privacy.erasure import ErasureRequest, approve_erasure, request_erasure
from server.domain.privacy.holds import Hold, place_hold, release_hold
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.domain.privacy.receipts import ErasureDeferred, ErasureReceipt
from server.retention_worker import RetentionWorker
from server.store import sql
from server.store.database import Database
from tests.conftest import ADMIN
from tests.privacy.conftest import attach_policy
from tests.privacy.erasure_helpers import (
    CARL,
    CORA,
    REVIEWER,
    add_retention_class,
    enqueue,
    fields_of,
    log_actions,
    snapshot,
    utcnow,
)

DAY = 24 * 3600


@pytest.fixture
def ledger(tmp_path: Path) -> ErasureLedger:
    return ErasureLedger(tmp_path / "erasure-ledger.jsonl")


@pytest.fixture
async def short_retention(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    """Queue kyc's policy keeps personal data one day from the enqueue."""
    await add_retention_class(owner_conn, "one-day", DAY, "enqueued", basis="one day")
    await attach_policy(db, kyc_queue, retention_class="one-day")


async def hold_on(
    db: Database, subject: str, until: datetime | None = None, basis: str = "Litigation, case 44"
) -> Hold:
    hold = await place_hold(db, CORA, subject_ref=subject, item_ids=None, basis=basis, until=until)
    assert isinstance(hold, Hold), hold
    return hold


async def test_a_hold_keeps_its_subject_from_retention_and_changes_nothing(
    db: Database,
    short_retention: None,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    held = await enqueue(db, keyring, "app-1", "cust-held", 1)
    free = await enqueue(db, keyring, "app-2", "cust-free", 2)
    hold = await hold_on(db, "cust-held")
    worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
    before = {path: tuple(f) for path, f in (await fields_of(owner_conn, held.id)).items()}
    keys_before = await owner_conn.fetch(
        "SELECT * FROM privacy_subject_keys WHERE subject_ref = 'cust-held'"
    )

    done = await worker.run_once(now=utcnow() + timedelta(days=2))

    assert (done.subjects_erased, done.fields_erased) == (1, 3)
    assert {p: tuple(f) for p, f in (await fields_of(owner_conn, held.id)).items()} == before
    assert (
        await owner_conn.fetch("SELECT * FROM privacy_subject_keys WHERE subject_ref = 'cust-held'")
        == keys_before
    )
    assert (await fields_of(owner_conn, free.id))["applicant.name"]["erased_at"] is not None
    assert [e.subject_ref for e in ledger.entries()] == ["cust-free"]

    released = await release_hold(db, CARL, hold.id, "case closed")
    assert isinstance(released, Hold)
    assert (released.released_by, released.release_reason) == ("carl-compliance", "case closed")
    done = await worker.run_once(now=utcnow() + timedelta(days=2))

    assert (done.subjects_erased, done.fields_erased) == (1, 3)
    assert (await fields_of(owner_conn, held.id))["applicant.name"]["erased_at"] is not None
    assert [e.subject_ref for e in ledger.entries()] == ["cust-free", "cust-held"]


async def test_a_hold_on_one_item_keeps_that_item_and_defers_a_request(
    db: Database,
    short_retention: None,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    kept = await enqueue(db, keyring, "app-1", "cust-1", 1)
    gone = await enqueue(db, keyring, "app-2", "cust-1", 2)
    hold = await place_hold(
        db, CORA, subject_ref=None, item_ids=[kept.id], basis="Regulator inquiry", until=None
    )
    assert isinstance(hold, Hold)
    assert hold.item_ids == (kept.id,)

    # Retention reaches the free item; the key stays, the held item still needs it.
    await RetentionWorker(db, keyring, ledger, interval_seconds=3600).run_once(
        now=utcnow() + timedelta(days=2)
    )
    assert (await fields_of(owner_conn, gone.id))["applicant.name"]["erased_at"] is not None
    assert (await fields_of(owner_conn, kept.id))["applicant.name"]["erased_at"] is None
    assert (
        await owner_conn.fetchval(
            "SELECT shredded_at FROM privacy_subject_keys WHERE subject_ref = 'cust-1'"
        )
        is None
    )

    request = await request_erasure(db, CORA, "cust-1", "Art. 17")
    assert isinstance(request, ErasureRequest)
    before = await snapshot(owner_conn)
    deferred = await approve_erasure(db, CARL, request.id, keyring, ledger)
    assert isinstance(deferred, ErasureDeferred)
    # Both wait: the hold (no end) and the kept item's own day, which has not passed yet.
    assert (deferred.basis, deferred.until) == ("Regulator inquiry; one day", None)
    assert [(r.kind, r.item_ids) for r in deferred.reasons] == [
        ("hold", (kept.id,)),
        ("retention", (kept.id,)),
    ]
    assert await snapshot(owner_conn) == before

    # The erasure function itself keeps held items whoever calls it.
    row = await db.fetchrow(
        sql.privacy_erasure.ERASE_SUBJECT,
        subject_ref="cust-1",
        item_ids=None,
        queues=None,
        request_id=None,
        actor="x",
        actor_role="system",
        reason_kind="erasure_executed",
    )
    assert row is not None
    assert row["result"]["held_item_ids"] == [kept.id]
    assert row["result"]["fields_erased"] == 0
    assert await snapshot(owner_conn) == before


async def test_an_expired_hold_no_longer_holds(
    db: Database,
    short_retention: None,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    hold = await hold_on(db, "cust-1", until=utcnow() + timedelta(hours=1))
    # The hold ran out (moved back as the owner: the application may not rewrite holds).
    await owner_conn.execute(
        "UPDATE privacy_holds SET until = now() - interval '1 second' WHERE id = $1", hold.id
    )
    request = await request_erasure(db, CORA, "cust-1", "Art. 17")
    assert isinstance(request, ErasureRequest)
    # The enqueue retention ended too (a frozen clock two days on).
    receipt = await approve_erasure(
        db, CARL, request.id, keyring, ledger, now=utcnow() + timedelta(days=2)
    )
    assert isinstance(receipt, ErasureReceipt), receipt
    assert [i.item_id for i in receipt.items] == [item.id]


@pytest.mark.parametrize(
    "who",
    [ADMIN, REVIEWER, Principal("kyc-provider", Role.INTEGRATION, frozenset())],
)
async def test_only_compliance_places_and_releases_holds(
    db: Database, kyc_policy: object, keyring: Keyring, who: Principal
) -> None:
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    refused = await place_hold(db, who, subject_ref="cust-1", item_ids=None, basis="b", until=None)
    assert isinstance(refused, NotPermitted)
    hold = await hold_on(db, "cust-1")
    assert isinstance(await release_hold(db, who, hold.id, "r"), NotPermitted)


async def test_hold_refusals_and_a_second_release(
    db: Database, kyc_policy: object, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    now = utcnow()
    for subject, items, basis, until, field in (
        ("cust-1", [item.id], "b", None, "subjectRef"),
        (None, None, "b", None, "subjectRef"),
        ("cust-1", None, " ", None, "basis"),
        ("cust-1", None, "b", now - timedelta(seconds=1), "until"),
        (None, [], "b", None, "itemIds"),
    ):
        refused = await place_hold(
            db, CORA, subject_ref=subject, item_ids=items, basis=basis, until=until, now=now
        )
        assert isinstance(refused, InvalidInput), (subject, items, basis, until)
        assert refused.field == field
    assert await place_hold(
        db, CORA, subject_ref="nobody", item_ids=None, basis="b", until=None
    ) == NotFound("subject", "nobody")
    assert await place_hold(
        db, CORA, subject_ref=None, item_ids=[item.id + 1000], basis="b", until=None
    ) == NotFound("item with personal data", str(item.id + 1000))
    elsewhere = Principal("pia", Role.COMPLIANCE, frozenset({"payouts"}))
    assert isinstance(
        await place_hold(
            db, elsewhere, subject_ref=None, item_ids=[item.id], basis="b", until=None
        ),
        NotFound,
    )

    hold = await hold_on(db, "cust-1")
    first = await release_hold(db, CORA, hold.id, "done")
    second = await release_hold(db, CARL, hold.id, "done again")
    assert first == second
    assert isinstance(first, Hold)
    assert first.released_by == "cora-compliance"
    assert isinstance(await release_hold(db, elsewhere, hold.id, "x"), NotFound)
    assert isinstance(await release_hold(db, CORA, hold.id + 99, "x"), NotFound)
    assert await log_actions(owner_conn) == ["policy_set", "hold_placed", "hold_released"]
    assert await owner_conn.fetchval("SELECT count(*) FROM privacy_hold_releases") == 1
