"""Holds: the lease holder parks an item until a time, for a reason of the queue's
catalogue. It is not claimable until then, comes back with its priority without a sweeper,
and can be resumed early; a queue may say a hold stops the due-time clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.domain.controls.holds import Hold, define_hold_reason, hold_item, resume_item
from server.domain.failures import (
    InvalidHoldReason,
    InvalidInput,
    ItemNotWaiting,
    NotFound,
    NotHeld,
    NotPermitted,
    QueueEmpty,
    StaleLease,
)
from server.domain.model import Claim, HoldReason, Item, Principal, Role
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue
from server.domain.timeline.events import TimelineKind
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, MANAGER, reviewer
from tests.integration.helpers import (
    Listener,
    claim,
    claimed_one,
    decide,
    enqueue_one,
    expire_lease,
    item_row,
    later,
    refused_unheard,
    snapshot,
    timeline_after_enqueue,
)

ALICE = reviewer("alice")
BOB = reviewer("bob")
WAITING = "awaiting_customer"


@pytest.fixture
async def holdable(db: Database, kyc_queue: str) -> str:
    defined = await define_hold_reason(
        db, ADMIN, queue=kyc_queue, code=WAITING, label="Waiting for the customer"
    )
    assert isinstance(defined, HoldReason), defined
    return kyc_queue


async def hold(db: Database, held: Claim, until: datetime | None = None) -> Item:
    result = await hold_item(
        db, ALICE, Hold(str(held.item.id), str(held.lease_token), until or later(), WAITING)
    )
    assert isinstance(result, Item), result
    return result


async def end_hold_now(owner: asyncpg.Connection, item_id: int) -> None:
    """The hold's end arrives: moved in SQL, not slept through."""
    status = await owner.execute(
        "UPDATE review_items SET held_until = now() - interval '1 second' WHERE id = $1",
        item_id,
    )
    assert status == "UPDATE 1"


async def test_a_held_item_waits_out_its_hold_and_comes_back_with_its_priority(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    urgent = await enqueue_one(db, holdable, "cust-urgent", priority=100)
    await enqueue_one(db, holdable, "cust-routine-1")
    await enqueue_one(db, holdable, "cust-routine-2")
    held = await claim(db, ALICE)
    assert held.item.id == urgent.id
    parked = await hold(db, held)
    assert (parked.lease_owner, parked.hold_reason) == (None, WAITING)

    # Not claimable while held: the routine items go first.
    assert (await claim(db, BOB)).item.id != urgent.id
    await end_hold_now(owner_conn, urgent.id)

    # The claim after its end clears the hold and hands the item out first, by priority.
    assert (await claim(db, BOB)).item.id == urgent.id
    row = await item_row(owner_conn, urgent.id)
    assert (row["held_until"], row["hold_reason"]) == (None, None)


async def test_a_queue_of_held_items_is_empty(db: Database, holdable: str) -> None:
    await enqueue_one(db, holdable, "cust-1")
    await hold(db, await claim(db, ALICE))

    assert await claim_next(db, BOB, holdable) == QueueEmpty(holdable)


async def test_hold_and_resume_write_their_timeline_rows_and_hints(
    db: Database, holdable: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    held = await claimed_one(db, holdable, ALICE)
    started = (await item_row(owner_conn, held.item.id))["lease_started_at"]
    until = later(2)

    [held_hint] = await listener.events_of(hold(db, held, until))
    [resumed_hint] = await listener.events_of(resume_item(db, MANAGER, str(held.item.id)))

    for payload, kind in ((held_hint, "held"), (resumed_hint, "resumed")):
        event = parse_event(payload)
        assert event is not None
        assert (event.kind, event.queue, event.item_id) == (kind, "kyc", held.item.id)
    held_row, resumed_row = await timeline_after_enqueue(owner_conn, held.item.id)
    # The hold ended the lease: its row carries that lease, so the claim can be derived.
    assert (held_row["kind"], held_row["actor"], held_row["actor_role"]) == (
        TimelineKind.HELD,
        "alice",
        "reviewer",
    )
    assert (held_row["lease_token"], held_row["lease_started_at"]) == (held.lease_token, started)
    assert held_row["detail"]["reason"] == WAITING
    assert datetime.fromisoformat(held_row["detail"]["until"]) == until
    assert (resumed_row["kind"], resumed_row["actor"], resumed_row["lease_token"]) == (
        TimelineKind.RESUMED,
        "max-manager",
        None,
    )
    assert resumed_row["detail"]["reason"] == WAITING
    # Resumed, it is claimable at once.
    assert (await claim(db, BOB)).item.id == held.item.id


async def test_a_reviewer_of_the_queue_may_resume_and_others_may_not(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue_one(db, holdable, "cust-1")
    parked = await hold(db, await claim(db, ALICE))
    before = await snapshot(owner_conn)

    for stranger, refusal in (
        (reviewer("olga", "payouts"), NotFound),
        (Principal("mo", Role.MANAGER, frozenset({"payouts"})), NotFound),
        (ADMIN, NotPermitted),
        (APPROVER, NotPermitted),
        (INTEGRATION, NotPermitted),
    ):
        assert isinstance(await resume_item(db, stranger, str(parked.id)), refusal), stranger
    assert await snapshot(owner_conn) == before

    assert isinstance(await resume_item(db, BOB, str(parked.id)), Item)
    assert await resume_item(db, BOB, str(parked.id)) == NotHeld(parked.id)


async def test_an_ended_hold_cannot_be_resumed(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue_one(db, holdable, "cust-1")
    parked = await hold(db, await claim(db, ALICE))
    await end_hold_now(owner_conn, parked.id)

    assert await resume_item(db, MANAGER, str(parked.id)) == NotHeld(parked.id)


def _hold_refusals() -> list[tuple[str, dict[str, object], type]]:
    return [
        ("another's token", {"lease_token": "00000000-0000-0000-0000-000000000000"}, StaleLease),
        ("malformed token", {"lease_token": "nope"}, InvalidInput),
        ("unknown reason", {"reason": "lunch"}, InvalidHoldReason),
        ("end in the past", {"until": datetime.now(UTC) - timedelta(minutes=1)}, InvalidInput),
        ("end too far", {"until": later(24 * 400)}, InvalidInput),
        ("end without zone", {"until": datetime(2030, 1, 1)}, InvalidInput),
        ("bad id", {"item_id": "0"}, InvalidInput),
        ("missing item", {"item_id": "987654321"}, NotFound),
    ]


@pytest.mark.parametrize(
    ("case", "change", "refusal"), _hold_refusals(), ids=[r[0] for r in _hold_refusals()]
)
async def test_a_refused_hold_writes_nothing_and_sends_nothing(
    db: Database,
    holdable: str,
    owner_conn: asyncpg.Connection,
    listener: Listener,
    case: str,
    change: dict[str, object],
    refusal: type,
) -> None:
    held = await claimed_one(db, holdable, ALICE)
    fields: dict[str, object] = {
        "item_id": str(held.item.id),
        "lease_token": str(held.lease_token),
        "until": later(),
        "reason": WAITING,
    }
    fields.update(change)
    refused = hold_item(db, ALICE, Hold(**fields))  # type: ignore[arg-type]
    await refused_unheard(owner_conn, listener, refused, refusal)


async def test_only_the_holder_holds_and_only_under_a_live_lease(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    held = await claimed_one(db, holdable, ALICE)
    as_bob = Hold(str(held.item.id), str(held.lease_token), later(), WAITING)
    assert await hold_item(db, BOB, as_bob) == StaleLease(held.item.id)
    assert isinstance(await hold_item(db, MANAGER, as_bob), NotPermitted)

    await expire_lease(owner_conn, held.item.id)
    assert await hold_item(db, ALICE, as_bob) == StaleLease(held.item.id)
    # A decided item's lease is over too.
    decided = await decide(db, BOB, await claim(db, BOB))
    assert isinstance(await resume_item(db, MANAGER, str(decided.item_id)), ItemNotWaiting)


async def test_a_reason_of_another_queues_catalogue_is_refused(db: Database, holdable: str) -> None:
    defined = await define_hold_reason(db, ADMIN, queue="kyc-senior", code="legal", label="Legal")
    assert isinstance(defined, HoldReason)
    held = await claimed_one(db, holdable, ALICE)

    refused = await hold_item(
        db, ALICE, Hold(str(held.item.id), str(held.lease_token), later(), "legal")
    )

    assert refused == InvalidHoldReason("kyc", "legal")


async def test_the_catalogue_is_an_admins(db: Database, kyc_queue: str) -> None:
    assert isinstance(
        await define_hold_reason(db, MANAGER, queue=kyc_queue, code="x", label="X"), NotPermitted
    )
    for code, label in (("has space", "ok"), ("ok", ""), ("ok", "x" * 201)):
        refused = await define_hold_reason(db, ADMIN, queue=kyc_queue, code=code, label=label)
        assert isinstance(refused, InvalidInput), (code, label)
    assert isinstance(
        await define_hold_reason(db, ADMIN, queue="nope", code="ok", label="ok"), InvalidInput
    )
    relabelled = await define_hold_reason(db, ADMIN, queue=kyc_queue, code="x", label="First")
    relabelled = await define_hold_reason(db, ADMIN, queue=kyc_queue, code="x", label="Second")
    assert relabelled == HoldReason(kyc_queue, "x", "Second")


async def pausing(db: Database, queue: str, pauses: bool) -> None:
    configured = await configure_queue(
        db, ADMIN, QueueSettings(queue, due_seconds=3600, hold_pauses_due=pauses)
    )
    assert not hasattr(configured, "message"), configured


async def claimed_with_due_time(db: Database, queue: str, pauses: bool) -> tuple[Claim, datetime]:
    """The queue due in an hour, its holds pausing the clock or not: a fresh item claimed by
    alice, and its due time."""
    await pausing(db, queue, pauses=pauses)
    held = await claimed_one(db, queue, ALICE)
    due = held.item.due_at
    assert due is not None
    return held, due


async def test_a_hold_moves_the_due_time_only_where_the_queue_says(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    held, due = await claimed_with_due_time(db, holdable, pauses=False)

    assert (await hold(db, held, later(5))).due_at == due


async def test_a_pausing_hold_gives_back_what_an_early_resume_did_not_use(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    held, due = await claimed_with_due_time(db, holdable, pauses=True)
    until = later(5)

    parked = await hold(db, held, until)
    resumed = await resume_item(db, MANAGER, str(held.item.id))

    assert isinstance(resumed, Item)
    held_row, resumed_row = await timeline_after_enqueue(owner_conn, held.item.id)
    # While held, the due time is as if the hold ran its course...
    assert parked.due_at == due + (until - held_row["at"])
    # ...and resumed early, it has moved on by the time the item was actually held.
    assert resumed.due_at == due + (resumed_row["at"] - held_row["at"])


async def test_a_pausing_hold_that_runs_its_course_keeps_the_whole_pause(
    db: Database, holdable: str, owner_conn: asyncpg.Connection
) -> None:
    await pausing(db, holdable, pauses=True)
    held = await claimed_one(db, holdable, ALICE)
    parked = await hold(db, held, later(5))
    await end_hold_now(owner_conn, held.item.id)

    back = await claim(db, BOB)

    assert back.item.id == held.item.id
    assert back.item.due_at == parked.due_at
