"""Bulk actions: a manager releases, assigns, moves or holds many items in one fenced
statement, all or nothing, each item's change in its timeline, one hint per queue; items
under a live lease are skipped unless the call revokes their leases."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import asyncpg
import pytest

from server.domain.controls.assignments import Assignment, assign_item
from server.domain.controls.bulk import (
    MAX_BULK_ITEMS,
    Applied,
    ItemFilter,
    Selection,
    SkipReason,
    bulk_assign,
    bulk_hold,
    bulk_move,
    bulk_release,
)
from server.domain.controls.holds import define_hold_reason
from server.domain.failures import (
    InvalidHoldReason,
    InvalidInput,
    NotFound,
    NotPermitted,
    QueueEmpty,
)
from server.domain.model import Claim, HoldReason, Item, ItemState, Principal, Role
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue
from server.domain.timeline.events import TimelineKind
from server.events.channels import EventKind, parse_event
from server.store.database import Database
from tests.conftest import ADMIN, INTEGRATION, MANAGER, reviewer, token_maker
from tests.integration.helpers import (
    Listener,
    claim,
    decide,
    expire_lease,
    item_row,
    later,
    snapshot,
    timeline_after_enqueue,
)

ALICE = reviewer("alice")
BOB = reviewer("bob")
OUTSIDER = Principal("mo", Role.MANAGER, frozenset({"payouts"}))
WAITING = "awaiting_customer"
REASON = "Rebalancing the team's work."


@pytest.fixture
async def team(db: Database, owner_db: Database, kyc_queue: str) -> str:
    """kyc with a hold reason in kyc and kyc-senior, and reviewer tokens for alice and bob."""
    for queue in ("kyc", "kyc-senior"):
        defined = await define_hold_reason(
            db, ADMIN, queue=queue, code=WAITING, label="Waiting for the customer"
        )
        assert isinstance(defined, HoldReason), defined
    make = token_maker(owner_db)
    await make("alice", Role.REVIEWER, "kyc", "kyc-senior")
    await make("bob", Role.REVIEWER, "kyc")
    return kyc_queue


def ids(*items: Item) -> Selection:
    return Selection(item_ids=[str(item.id) for item in items])


def applied(result: object) -> Applied:
    assert isinstance(result, Applied), result
    return result


def kinds(rows: list[asyncpg.Record]) -> list[str]:
    return [row["kind"] for row in rows]


async def enqueue_many(db: Database, queue: str, count: int, prefix: str = "cust") -> list[Item]:
    result = await enqueue_items(
        db, INTEGRATION, queue, [NewItem(f"{prefix}-{n:04}", {"n": n}) for n in range(count)]
    )
    assert isinstance(result, list), result
    return sorted((entry.item for entry in result), key=lambda item: item.id)


# --- each mutation: its change, its timeline rows, its hint ----------------------------------


async def test_bulk_hold_parks_waiting_items_and_skips_a_leased_one(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    first, second, third = await enqueue_many(db, team, 3)
    leased = await claim(db, BOB)
    assert leased.item.id == first.id
    until = later(2)

    [hint] = await listener.events_of(
        bulk_hold(db, MANAGER, ids(first, second, third), until=until, reason=WAITING)
    )

    result = applied(
        await bulk_hold(db, MANAGER, ids(first, second, third), until=until, reason=WAITING)
    )
    # Second call: the two held are already so, the leased one still leased.
    assert [s.reason for s in result.skipped] == [
        SkipReason.LEASED,
        SkipReason.ALREADY_SO,
        SkipReason.ALREADY_SO,
    ]
    assert result.skipped[0].lease_owner == "bob"
    assert result.changed == ()
    for item in (second, third):
        row = await item_row(owner_conn, item.id)
        assert (row["held_until"], row["hold_reason"]) == (until, WAITING)
        [held] = await timeline_after_enqueue(owner_conn, item.id)
        assert held["kind"] == TimelineKind.HELD
        assert (held["actor"], held["actor_role"]) == ("max-manager", "manager")
        assert held["detail"]["reason"] == WAITING
        assert datetime.fromisoformat(held["detail"]["until"]) == until
    assert await timeline_after_enqueue(owner_conn, first.id) == []
    event = parse_event(hint)
    assert event is not None
    assert (event.kind, event.queue, event.item_ids) == (
        EventKind.BULK,
        team,
        (second.id, third.id),
    )
    # The held items are not handed out; bob's stays his.
    assert await claim_next(db, ALICE, team) == QueueEmpty(team)


async def test_bulk_hold_with_revoke_leases_revokes_then_holds(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue_many(db, team, 1)
    leased = await claim(db, BOB)
    started = (await item_row(owner_conn, item.id))["lease_started_at"]

    result = applied(
        await bulk_hold(db, MANAGER, ids(item), until=later(), reason=WAITING, revoke_leases=True)
    )

    [changed] = result.changed
    assert (changed.lease_owner, changed.hold_reason) == (None, WAITING)
    revoked, held = await timeline_after_enqueue(owner_conn, item.id)
    assert kinds([revoked, held]) == [TimelineKind.REVOKED, TimelineKind.HELD]
    assert revoked["detail"] == {"owner": "bob"}
    assert revoked["body"] == "Waiting for the customer"
    assert (revoked["lease_token"], revoked["lease_started_at"]) == (leased.lease_token, started)


async def test_bulk_release_ends_holds_assignments_and_with_revoke_leases_leases(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    held, assigned, leased, free = await enqueue_many(db, team, 4)
    until = later()
    applied(await bulk_hold(db, MANAGER, ids(held), until=until, reason=WAITING))
    assert isinstance(await assign_item(db, MANAGER, Assignment(str(assigned.id), "alice")), Item)
    # bob's claim takes the oldest free item: `leased`.
    assert (await claim(db, BOB)).item.id == leased.id

    plain = applied(await bulk_release(db, MANAGER, ids(held, assigned, leased, free)))
    assert [item.id for item in plain.changed] == [held.id, assigned.id]
    assert [(s.item.id, s.reason, s.lease_owner) for s in plain.skipped] == [
        (leased.id, SkipReason.LEASED, "bob"),
        (free.id, SkipReason.ALREADY_SO, None),
    ]
    [hint] = await listener.events_of(
        bulk_release(db, MANAGER, ids(leased, free), revoke_leases=True, reason=REASON)
    )

    assert kinds(await timeline_after_enqueue(owner_conn, held.id)) == [
        TimelineKind.HELD,
        TimelineKind.RESUMED,
    ]
    *_, unassigned = await timeline_after_enqueue(owner_conn, assigned.id)
    assert unassigned["kind"] == TimelineKind.UNASSIGNED
    assert unassigned["detail"] == {"reviewer": "alice", "until": None}
    [revoked] = await timeline_after_enqueue(owner_conn, leased.id)
    assert (revoked["kind"], revoked["body"]) == (TimelineKind.REVOKED, REASON)
    assert revoked["detail"] == {"owner": "bob"}
    assert await timeline_after_enqueue(owner_conn, free.id) == []
    event = parse_event(hint)
    assert event is not None
    assert event.item_ids == (leased.id,)
    # Everything is claimable by anyone now.
    claimed = {(await claim(db, ALICE)).item.id for _ in range(4)}
    assert claimed == {held.id, assigned.id, leased.id, free.id}


async def test_bulk_assign_reserves_items_for_the_reviewer(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    first, second = await enqueue_many(db, team, 2)
    until = later()

    [hint] = await listener.events_of(
        bulk_assign(db, MANAGER, ids(first, second), reviewer="alice", until=until, reason=REASON)
    )

    again = applied(await bulk_assign(db, MANAGER, ids(first), reviewer="alice", until=until))
    assert [s.reason for s in again.skipped] == [SkipReason.ALREADY_SO]
    for item in (first, second):
        [row] = await timeline_after_enqueue(owner_conn, item.id)
        assert (row["kind"], row["body"]) == (TimelineKind.ASSIGNED, REASON)
        assert row["detail"]["reviewer"] == "alice"
        assert datetime.fromisoformat(row["detail"]["until"]) == until
    assert json.loads(hint)["is"] == [first.id, second.id]
    assert await claim_next(db, BOB, team) == QueueEmpty(team)
    assert (await claim(db, ALICE)).item.id == first.id


async def test_bulk_move_moves_items_with_their_priority_and_leaves_the_queue_behind(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    configured = await configure_queue(db, ADMIN, QueueSettings("kyc-senior", due_seconds=3600))
    assert not hasattr(configured, "message"), configured
    held, assigned = await enqueue_many(db, team, 2)
    applied(await bulk_hold(db, MANAGER, ids(held), until=later(), reason=WAITING))
    applied(await bulk_assign(db, MANAGER, ids(assigned), reviewer="bob"))

    [hint] = await listener.events_of(
        bulk_move(db, MANAGER, ids(held, assigned), to_queue="kyc-senior", reason=REASON)
    )

    for item in (held, assigned):
        row = await item_row(owner_conn, item.id)
        assert (row["queue"], row["priority"]) == ("kyc-senior", item.priority)
        assert (row["held_until"], row["assigned_to"]) == (None, None)
        assert row["due_at"] is not None
        *_, moved = await timeline_after_enqueue(owner_conn, item.id)
        assert (moved["kind"], moved["queue"], moved["body"]) == (TimelineKind.MOVED, team, REASON)
        assert moved["detail"] == {"from_queue": team, "to_queue": "kyc-senior"}
    assert kinds(await timeline_after_enqueue(owner_conn, held.id)) == [
        TimelineKind.HELD,
        TimelineKind.RESUMED,
        TimelineKind.MOVED,
    ]
    event = parse_event(hint)
    assert event is not None
    assert set(event.queues) == {team, "kyc-senior"}
    again = applied(await bulk_move(db, MANAGER, ids(held), to_queue="kyc-senior"))
    assert [s.reason for s in again.skipped] == [SkipReason.ALREADY_SO]
    senior = reviewer("alice", "kyc", "kyc-senior")
    assert (await claim(db, senior, "kyc-senior")).item.id == held.id


async def test_a_move_writes_off_a_lapsed_lease(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue_many(db, team, 1)
    await claim(db, BOB)
    await expire_lease(owner_conn, item.id)

    applied(await bulk_move(db, MANAGER, ids(item), to_queue="kyc-senior"))

    assert kinds(await timeline_after_enqueue(owner_conn, item.id)) == [
        TimelineKind.LAPSED,
        TimelineKind.MOVED,
    ]


async def test_one_hint_per_queue_the_items_were_in(
    db: Database, team: str, listener: Listener
) -> None:
    here = await enqueue_many(db, team, 2)
    there = await enqueue_many(db, "kyc-senior", 2, prefix="senior")

    hints = await listener.events_of(
        bulk_hold(db, MANAGER, ids(*here, *there), until=later(), reason=WAITING)
    )

    events = sorted((e for e in map(parse_event, hints) if e), key=lambda e: e.queue)
    assert [(e.kind, e.queue, e.item_ids) for e in events] == [
        (EventKind.BULK, team, tuple(i.id for i in here)),
        (EventKind.BULK, "kyc-senior", tuple(i.id for i in there)),
    ]


async def test_a_decided_item_is_skipped_as_not_waiting(db: Database, team: str) -> None:
    [item] = await enqueue_many(db, team, 1)
    await decide(db, ALICE, await claim(db, ALICE))

    result = applied(await bulk_hold(db, MANAGER, ids(item), until=later(), reason=WAITING))

    assert [(s.item.id, s.reason) for s in result.skipped] == [(item.id, SkipReason.NOT_WAITING)]


# --- the filter form ----------------------------------------------------------------------


async def test_a_filter_takes_the_oldest_500_and_says_there_are_more(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    items = await enqueue_many(db, team, MAX_BULK_ITEMS + 3)
    selection = Selection(filter=ItemFilter(team))

    first = applied(await bulk_hold(db, MANAGER, selection, until=later(), reason=WAITING))
    second = applied(await bulk_hold(db, MANAGER, selection, until=later(), reason=WAITING))

    assert (len(first.changed), first.more) == (MAX_BULK_ITEMS, True)
    assert [item.id for item in first.changed] == [item.id for item in items[:MAX_BULK_ITEMS]]
    # Held items no longer match: the next call takes the rest.
    assert ([item.id for item in second.changed], second.more) == (
        [item.id for item in items[MAX_BULK_ITEMS:]],
        False,
    )


async def test_a_filter_by_state_assignment_overdue_and_age(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    leased, old, assigned, overdue = await enqueue_many(db, team, 4)
    assert (await claim(db, ALICE)).item.id == leased.id
    await owner_conn.execute(
        "UPDATE review_items SET created_at = now() - interval '2 hours' WHERE id = $1", old.id
    )
    await owner_conn.execute(
        "UPDATE review_items SET due_at = now() - interval '1 minute' WHERE id = $1", overdue.id
    )
    applied(await bulk_assign(db, MANAGER, ids(assigned), reviewer="bob"))

    by_age = applied(
        await bulk_move(
            db,
            MANAGER,
            Selection(filter=ItemFilter(team, older_than_seconds=3600)),
            to_queue="kyc-senior",
        )
    )
    assert [item.id for item in by_age.changed] == [old.id]
    by_assignment = applied(
        await bulk_release(db, MANAGER, Selection(filter=ItemFilter(team, assigned=True)))
    )
    assert [item.id for item in by_assignment.changed] == [assigned.id]
    by_due = applied(
        await bulk_hold(
            db,
            MANAGER,
            Selection(filter=ItemFilter(team, overdue=True)),
            until=later(),
            reason=WAITING,
        )
    )
    assert [item.id for item in by_due.changed] == [overdue.id]
    by_lease = applied(
        await bulk_hold(
            db,
            MANAGER,
            Selection(filter=ItemFilter(team, state=ItemState.LEASED)),
            until=later(),
            reason=WAITING,
        )
    )
    assert [(s.item.id, s.reason, s.lease_owner) for s in by_lease.skipped] == [
        (leased.id, SkipReason.LEASED, "alice")
    ]
    assert by_lease.changed == ()


# --- refusals: the whole call, typed, nothing written --------------------------------------


async def test_refusals_write_nothing(
    db: Database, team: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    item, other = await enqueue_many(db, team, 2)
    exception_item = await owner_conn.fetchval(
        "UPDATE review_items SET kind = 'exception' WHERE id = $1 RETURNING id", other.id
    )
    before = await snapshot(owner_conn)
    unknown = Selection(item_ids=[str(item.id), "999999"])

    refusals: list[tuple[object, object]] = []

    async def refuse_every_way() -> None:
        refusals.extend(
            [
                (
                    await bulk_hold(db, MANAGER, unknown, until=later(), reason=WAITING),
                    NotFound("item", "999999"),
                ),
                (
                    await bulk_hold(db, OUTSIDER, ids(item), until=later(), reason=WAITING),
                    NotFound("item", str(item.id)),
                ),
                (
                    await bulk_release(
                        db, MANAGER, Selection(item_ids=[str(item.id), str(exception_item)])
                    ),
                    InvalidInput,
                ),
                (
                    await bulk_hold(db, MANAGER, ids(item), until=later(), reason="nope"),
                    InvalidHoldReason(team, "nope"),
                ),
                (
                    await bulk_hold(
                        db,
                        MANAGER,
                        Selection(filter=ItemFilter(team)),
                        until=later(),
                        reason="nope",
                    ),
                    InvalidHoldReason(team, "nope"),
                ),
                (
                    await bulk_hold(db, MANAGER, ids(item), until=later(-1), reason=WAITING),
                    InvalidInput,
                ),
                (await bulk_assign(db, MANAGER, ids(item), reviewer="nobody"), InvalidInput),
                (await bulk_move(db, MANAGER, ids(item), to_queue="nowhere"), InvalidInput),
                (await bulk_move(db, OUTSIDER, ids(item), to_queue="kyc-senior"), NotPermitted),
                (
                    await bulk_release(db, OUTSIDER, Selection(filter=ItemFilter(team))),
                    NotPermitted,
                ),
                (
                    await bulk_release(db, MANAGER, Selection()),
                    InvalidInput("items takes exactly one of itemIds and filter", "items"),
                ),
                (await bulk_release(db, MANAGER, Selection(item_ids=[])), InvalidInput),
                (
                    await bulk_release(
                        db, MANAGER, Selection(item_ids=[str(n) for n in range(1, 502)])
                    ),
                    InvalidInput,
                ),
                (
                    await bulk_release(
                        db, MANAGER, Selection(filter=ItemFilter(team, state=ItemState.DECIDED))
                    ),
                    InvalidInput,
                ),
                (await bulk_release(db, MANAGER, ids(item), revoke_leases=True), InvalidInput),
            ]
        )

    # The listener hears whatever the refusals notified, between two markers.
    hints = await listener.events_of(refuse_every_way())

    for answer, expected in refusals:
        if isinstance(expected, type):
            assert isinstance(answer, expected), (answer, expected)
        else:
            assert answer == expected
    fields = [answer.field for answer, _ in refusals if isinstance(answer, InvalidInput)]
    assert fields == [
        "itemIds",
        "until",
        "reviewer",
        "toQueue",
        "items",
        "itemIds",
        "itemIds",
        "state",
        "reason",
    ]
    assert await snapshot(owner_conn) == before
    assert hints == []


@pytest.mark.parametrize("role", [r for r in Role if r is not Role.MANAGER])
async def test_only_managers_apply_bulk_actions(
    db: Database, team: str, owner_conn: asyncpg.Connection, role: Role
) -> None:
    [item] = await enqueue_many(db, team, 1)
    before = await snapshot(owner_conn)
    who = Principal("someone", role, frozenset({team}))

    answers = [
        await bulk_release(db, who, ids(item)),
        await bulk_assign(db, who, ids(item), reviewer="alice"),
        await bulk_move(db, who, ids(item), to_queue="kyc-senior"),
        await bulk_hold(db, who, ids(item), until=later(), reason=WAITING),
    ]

    assert all(isinstance(answer, NotPermitted) for answer in answers), answers
    assert await snapshot(owner_conn) == before


# --- races -------------------------------------------------------------------------------


ROUNDS = 10


async def test_a_claim_racing_a_bulk_hold_either_wins_or_takes_another_item(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    for round_number in range(ROUNDS):
        target, spare = await enqueue_many(db, team, 2, prefix=f"r{round_number}")

        held, claimed = await asyncio.gather(
            bulk_hold(db, MANAGER, ids(target), until=later(), reason=WAITING),
            claim_next(db, ALICE, team),
        )

        result = applied(held)
        assert isinstance(claimed, Claim), claimed
        if result.changed:
            # The bulk call won: the claim took the other item.
            assert claimed.item.id == spare.id
            assert kinds(await timeline_after_enqueue(owner_conn, target.id)) == [TimelineKind.HELD]
        else:
            # The claim won: the item is skipped as alice's, and nothing was written.
            assert claimed.item.id == target.id
            assert [(s.reason, s.lease_owner) for s in result.skipped] == [
                (SkipReason.LEASED, "alice")
            ]
            assert await timeline_after_enqueue(owner_conn, target.id) == []
        await owner_conn.execute(
            "UPDATE review_items SET state = 'decided', decided_at = now(), lease_token = NULL,"
            " lease_owner = NULL, lease_expires_at = NULL, held_until = NULL, hold_reason = NULL"
            " WHERE id = ANY($1)",
            [target.id, spare.id],
        )


async def test_a_claim_racing_a_revoking_bulk_hold_is_revoked_or_loses(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    for round_number in range(ROUNDS):
        [target] = await enqueue_many(db, team, 1, prefix=f"r{round_number}")

        held, claimed = await asyncio.gather(
            bulk_hold(db, MANAGER, ids(target), until=later(), reason=WAITING, revoke_leases=True),
            claim_next(db, ALICE, team),
        )

        [changed] = applied(held).changed
        assert changed.hold_reason == WAITING
        steps = kinds(await timeline_after_enqueue(owner_conn, target.id))
        if isinstance(claimed, Claim):
            # The claim came first; the bulk call revoked its lease, then held the item.
            assert steps == [TimelineKind.REVOKED, TimelineKind.HELD]
        else:
            assert claimed == QueueEmpty(team)
            assert steps == [TimelineKind.HELD]
        await owner_conn.execute(
            "UPDATE review_items SET state = 'decided', decided_at = now(), held_until = NULL,"
            " hold_reason = NULL"
            " WHERE id = $1",
            target.id,
        )


async def test_overlapping_bulk_calls_do_not_deadlock(
    db: Database, team: str, owner_conn: asyncpg.Connection
) -> None:
    items = await enqueue_many(db, team, 60)
    forward = Selection(item_ids=[str(item.id) for item in items[:40]])
    backward = Selection(item_ids=[str(item.id) for item in reversed(items[20:])])

    for _ in range(ROUNDS):
        answers = await asyncio.gather(
            bulk_assign(db, MANAGER, forward, reviewer="alice"),
            bulk_assign(db, MANAGER, backward, reviewer="bob"),
            bulk_release(db, MANAGER, forward),
            bulk_release(db, MANAGER, backward),
        )
        assert all(isinstance(answer, Applied) for answer in answers), answers
