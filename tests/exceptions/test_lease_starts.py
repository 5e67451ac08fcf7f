"""One record of when a lease began: the item's `lease_started_at`, stamped by the claim.
Each exception action under a lease records that start on its event, read from the item
row its fence holds; the second record (migration 0009's exception_leases, written by a
trigger at every claim of an exception's item) is gone, trigger and all (migration 0022)."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from server.domain.exceptions.actions import (
    CorrectionInput,
    approve_correction,
    attach_evidence,
    close_exception,
    reject_correction,
    submit_correction,
)
from server.domain.exceptions.records import Closure
from server.domain.model import Claim
from server.store.database import Database
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, REASON
from tests.exceptions.domain_drivers import ANN, SAM, claim_exception, event_rows, raise_one


async def test_the_second_record_and_its_trigger_are_gone(
    owner_conn: asyncpg.Connection,
) -> None:
    assert await owner_conn.fetchval("SELECT to_regclass('exception_leases')") is None
    triggers = await owner_conn.fetch(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 'review_items'::regclass "
        "AND NOT tgisinternal"
    )
    assert [row["tgname"] for row in triggers] == []
    assert (
        await owner_conn.fetchval(
            "SELECT count(*) FROM pg_proc WHERE proname = 'exception_leases_record'"
        )
        == 0
    )


async def started(owner_conn: asyncpg.Connection, claim: Claim) -> datetime:
    """When the claim's lease began, as its item records it (read before the next claim)."""
    found: datetime | None = await owner_conn.fetchval(
        "SELECT lease_started_at FROM review_items WHERE id = $1 AND lease_token = $2",
        claim.item.id,
        claim.lease_token,
    )
    assert found is not None, claim
    return found


def correction(exception_id: str, claim: Claim) -> CorrectionInput:
    return CorrectionInput(
        exception_id=exception_id,
        lease_token=str(claim.lease_token),
        reason_code=REASON,
        changes={"legalName": "Acme Holdings Ltd"},
        evidence=["registry://companies-house/09876543"],
    )


async def test_each_action_under_a_lease_records_the_start_of_that_lease(
    db: Database, owner_conn: asyncpg.Connection, supplier_workflow: str
) -> None:
    first = (await raise_one(db, "SUP-1")).exception.id
    sam = await claim_exception(db, SAM, OWNER_QUEUE, first)
    sam_started = await started(owner_conn, sam)
    await attach_evidence(db, SAM, first, str(sam.lease_token), ["doc://1"], None)
    await submit_correction(db, SAM, correction(first, sam))
    ann = await claim_exception(db, ANN, APPROVAL_QUEUE, first)
    ann_started = await started(owner_conn, ann)
    await reject_correction(db, ANN, first, str(ann.lease_token), "Wrong registry entry.")
    sam_again = await claim_exception(db, SAM, OWNER_QUEUE, first)
    sam_again_started = await started(owner_conn, sam_again)
    await submit_correction(db, SAM, correction(first, sam_again))
    ann_again = await claim_exception(db, ANN, APPROVAL_QUEUE, first)
    ann_again_started = await started(owner_conn, ann_again)
    await approve_correction(db, ANN, first, str(ann_again.lease_token), 2, None)

    second = (await raise_one(db, "SUP-2")).exception.id
    closer = await claim_exception(db, SAM, OWNER_QUEUE, second)
    closer_started = await started(owner_conn, closer)
    await close_exception(db, SAM, second, str(closer.lease_token), Closure.OBSOLETE, None)

    recorded = [
        (row["kind"], row["lease_started_at"])
        for exception_id in (first, second)
        for row in await event_rows(owner_conn, exception_id)
    ]
    assert recorded == [
        ("raised", None),
        ("evidence_attached", sam_started),
        ("correction_submitted", sam_started),
        ("correction_rejected", ann_started),
        ("correction_submitted", sam_again_started),
        ("correction_approved", ann_again_started),
        ("raised", None),
        ("closed", closer_started),
    ]
    starts = {sam_started, ann_started, sam_again_started, ann_again_started, closer_started}
    assert len(starts) == 5
