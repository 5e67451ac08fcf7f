"""Assignment: a manager reserves an item for one named reviewer. Only that reviewer's claim
returns it, before anything else; others walk past it; it ends without a sweeper."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.domain.controls.assignments import Assignment, assign_item, unassign_item
from server.domain.failures import (
    InvalidInput,
    ItemNotWaiting,
    NotAssigned,
    NotFound,
    NotPermitted,
    QueueEmpty,
)
from server.domain.model import Claim, Item, Principal, Role, Verdict
from server.domain.review.leases import claim_next
from server.domain.timeline.events import TimelineKind
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, MANAGER, reviewer, token_maker
from tests.integration.helpers import (
    Listener,
    claim,
    claimed_one,
    decide,
    enqueue_one,
    item_row,
    refused_unheard,
    snapshot,
    timeline_after_enqueue,
)

ALICE = reviewer("alice")
BOB = reviewer("bob")
OUTSIDER = Principal("mo", Role.MANAGER, frozenset({"payouts"}))


@pytest.fixture
async def team(owner_db: Database, kyc_queue: str) -> str:
    """Reviewer tokens for alice and bob in kyc (an assignee needs a live token there), and
    olga's in payouts only."""
    make = token_maker(owner_db)
    await make("alice", Role.REVIEWER, "kyc", "kyc-senior")
    await make("bob", Role.REVIEWER, "kyc")
    await make("olga", Role.REVIEWER, "payouts")
    return kyc_queue


async def assign(
    db: Database, item: Item, to: str, until: datetime | None = None, by: Principal = MANAGER
) -> Item:
    result = await assign_item(db, by, Assignment(str(item.id), to, until))
    assert isinstance(result, Item), result
    return result


def in_an_hour() -> datetime:
    return datetime.now(UTC) + timedelta(hours=1)


async def test_an_assigned_item_comes_first_for_its_assignee_and_never_to_others(
    db: Database, team: str
) -> None:
    mine = await enqueue_one(db, team, "cust-low", priority=0)
    other = await enqueue_one(db, team, "cust-high", priority=10)
    await assign(db, mine, "alice")

    # Bob walks past the item reserved for alice: he gets the other, then nothing.
    assert (await claim(db, BOB)).item.id == other.id
    assert await claim_next(db, BOB, team) == QueueEmpty(team)
    # Alice's assignment comes before the higher-priority work (given to bob here anyway).
    assert (await claim(db, ALICE)).item.id == mine.id


async def test_assigned_work_outranks_priority_for_its_assignee(db: Database, team: str) -> None:
    mine = await enqueue_one(db, team, "cust-low", priority=-5)
    await enqueue_one(db, team, "cust-high", priority=50)
    await assign(db, mine, "alice")

    assert (await claim(db, ALICE)).item.id == mine.id


async def test_an_assignment_ends_at_its_time_with_no_sweeper(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, team, "cust-1")
    await assign(db, item, "alice", until=in_an_hour())
    assert await claim_next(db, BOB, team) == QueueEmpty(team)
    # The end arrives (moved in SQL, not slept through): the next claim clears it first.
    await owner_conn.execute(
        "UPDATE review_items SET assigned_until = now() - interval '1 second' WHERE id = $1",
        item.id,
    )

    taken = await claim(db, BOB)

    assert taken.item.id == item.id
    row = await item_row(owner_conn, item.id)
    assert (row["assigned_to"], row["assigned_until"]) == (None, None)
    # The end needs no row of its own: the `assigned` row says when it was to end.
    assert [e["kind"] for e in await timeline_after_enqueue(owner_conn, item.id)] == [
        TimelineKind.ASSIGNED
    ]


async def test_an_ended_assignment_comes_back_with_its_priority(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    reserved = await enqueue_one(db, team, "cust-urgent", priority=100)
    await enqueue_one(db, team, "cust-routine", priority=0)
    await assign(db, reserved, "alice", until=in_an_hour())
    await owner_conn.execute(
        "UPDATE review_items SET assigned_until = now() - interval '1 second' WHERE id = $1",
        reserved.id,
    )

    # The first claim after the end takes the urgent item, not the routine one.
    assert (await claim(db, BOB)).item.id == reserved.id


async def test_assignment_and_unassignment_write_their_timeline_rows_and_hints(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    item = await enqueue_one(db, team, "cust-1")
    until = in_an_hour()

    [assigned_hint] = await listener.events_of(assign(db, item, "alice", until))
    [unassigned_hint] = await listener.events_of(unassign_item(db, MANAGER, str(item.id)))

    for payload, kind in ((assigned_hint, "assigned"), (unassigned_hint, "unassigned")):
        event = parse_event(payload)
        assert event is not None
        assert (event.kind, event.queue, event.item_id) == (kind, "kyc", item.id)
    rows = await timeline_after_enqueue(owner_conn, item.id)
    assert [(r["kind"], r["actor"], r["actor_role"], r["queue"]) for r in rows] == [
        (TimelineKind.ASSIGNED, "max-manager", "manager", "kyc"),
        (TimelineKind.UNASSIGNED, "max-manager", "manager", "kyc"),
    ]
    assert rows[0]["detail"]["reviewer"] == "alice"
    assert datetime.fromisoformat(rows[0]["detail"]["until"]) == until
    assert rows[1]["detail"] == {"reviewer": "alice"}
    # Unassigned, it is anyone's again.
    assert (await claim(db, BOB)).item.id == item.id


async def test_reassigning_moves_the_item_to_the_new_assignee(db: Database, team: str) -> None:
    item = await enqueue_one(db, team, "cust-1")
    await assign(db, item, "alice")
    reassigned = await assign(db, item, "bob")

    assert reassigned.assigned_to == "bob"
    assert await claim_next(db, ALICE, team) == QueueEmpty(team)
    assert (await claim(db, BOB)).item.id == item.id


async def test_an_assignment_stays_through_a_release_and_ends_with_the_decision(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, team, "cust-1")
    await assign(db, item, "alice")
    held: Claim = await claim(db, ALICE)

    escalated = await decide(db, ALICE, held, Verdict.ESCALATE, "needs_senior")

    row = await item_row(owner_conn, escalated.item_id)
    assert (row["queue"], row["assigned_to"]) == ("kyc-senior", None)
    # In the escalation queue it is anyone's: the assignment was for the old queue.
    assert (await claim(db, reviewer("carol", "kyc-senior"), "kyc-senior")).item.id == item.id


async def test_a_leased_item_can_be_assigned_and_its_lease_is_left_alone(
    db: Database, team: str
) -> None:
    held = await claimed_one(db, team, BOB)

    assigned = await assign(db, held.item, "alice")

    assert (assigned.lease_owner, assigned.assigned_to) == ("bob", "alice")


def _refusals() -> list[tuple[str, Principal, dict[str, object], type]]:
    past = datetime.now(UTC) - timedelta(minutes=1)
    return [
        ("reviewer", ALICE, {}, NotPermitted),
        ("admin", ADMIN, {}, NotPermitted),
        ("approver", APPROVER, {}, NotPermitted),
        ("integration", INTEGRATION, {}, NotPermitted),
        ("other team's manager", OUTSIDER, {}, NotFound),
        ("unknown reviewer", MANAGER, {"reviewer": "nobody"}, InvalidInput),
        ("reviewer of another queue", MANAGER, {"reviewer": "olga"}, InvalidInput),
        ("blank reviewer", MANAGER, {"reviewer": "  "}, InvalidInput),
        ("end in the past", MANAGER, {"until": past}, InvalidInput),
        ("end too far", MANAGER, {"until": past + timedelta(days=400)}, InvalidInput),
        ("end without zone", MANAGER, {"until": datetime(2030, 1, 1)}, InvalidInput),
        ("bad id", MANAGER, {"item_id": "x1"}, InvalidInput),
        ("missing item", MANAGER, {"item_id": "987654321"}, NotFound),
    ]


@pytest.mark.parametrize(
    ("case", "by", "change", "refusal"), _refusals(), ids=[r[0] for r in _refusals()]
)
async def test_a_refused_assignment_writes_nothing_and_sends_nothing(
    db: Database,
    team: str,
    owner_conn: asyncpg.Connection,
    listener: Listener,
    case: str,
    by: Principal,
    change: dict[str, object],
    refusal: type,
) -> None:
    item = await enqueue_one(db, team, "cust-1")
    fields: dict[str, object] = {"item_id": str(item.id), "reviewer": "alice", "until": None}
    fields.update(change)
    refused = assign_item(db, by, Assignment(**fields))  # type: ignore[arg-type]
    await refused_unheard(owner_conn, listener, refused, refusal)


async def test_an_out_of_scope_item_answers_as_a_missing_one(db: Database, team: str) -> None:
    item = await enqueue_one(db, team, "cust-1")
    theirs = await assign_item(db, OUTSIDER, Assignment(str(item.id), "alice"))
    missing = await assign_item(db, OUTSIDER, Assignment("987654321", "alice"))

    assert isinstance(theirs, NotFound)
    assert isinstance(missing, NotFound)
    assert theirs.message.replace(str(item.id), "N") == missing.message.replace("987654321", "N")


async def test_a_decided_item_is_not_waiting(db: Database, team: str) -> None:
    await enqueue_one(db, team, "cust-1")
    decision = await decide(db, BOB, await claim(db, BOB))

    refused = await assign_item(db, MANAGER, Assignment(str(decision.item_id), "alice"))

    assert refused == ItemNotWaiting(decision.item_id, "decided")


async def test_unassigning_what_is_not_assigned_is_refused(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, team, "cust-1")
    assert await unassign_item(db, MANAGER, str(item.id)) == NotAssigned(item.id)
    # An assignment whose time is up is not one any more, even before a claim clears it.
    await assign(db, item, "alice", until=in_an_hour())
    await owner_conn.execute(
        "UPDATE review_items SET assigned_until = now() - interval '1 second' WHERE id = $1",
        item.id,
    )
    before = await snapshot(owner_conn)

    assert await unassign_item(db, MANAGER, str(item.id)) == NotAssigned(item.id)
    assert await snapshot(owner_conn) == before
    assert isinstance(await unassign_item(db, ALICE, str(item.id)), NotPermitted)
