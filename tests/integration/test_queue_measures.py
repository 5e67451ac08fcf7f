"""Queue measures on scripted histories with known answers: lease-count buckets, the reason
mix, hands-on percentiles from lease starts moved in SQL, lapses and releases, and the TTL
recommendation."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.domain.measures.queues import (
    MIN_SAMPLES_FOR_TTL,
    LeaseCountBucket,
    MeasureKey,
    ReasonCount,
    lease_counts,
    measure_key,
    reasons,
    reviewers,
    summaries,
)
from server.domain.model import Decision, Item, Principal, Role, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision
from server.domain.review.leases import release_lease
from server.store.database import Database
from tests.conftest import APPROVER, INTEGRATION, MANAGER, reviewer
from tests.integration.helpers import claim, decide, enqueue_one, expire_lease

ALICE = reviewer("alice")
BOB = reviewer("bob")
KEY = MeasureKey("kyc", DEFAULT_WINDOW_SECONDS, None)


async def lapse_and_reclaim(
    db: Database, owner_conn: asyncpg.Connection, principal: Principal, lapses: int
) -> None:
    """Claims the queue's only pending item `lapses` times, letting each lease run out."""
    for _ in range(lapses):
        held = await claim(db, principal)
        await expire_lease(owner_conn, held.item.id)


async def decided_after_claims(
    db: Database, owner_conn: asyncpg.Connection, key: str, claims: int
) -> Decision:
    await enqueue_one(db, "kyc", key)
    await lapse_and_reclaim(db, owner_conn, ALICE, claims - 1)
    return await decide(db, ALICE, await claim(db, ALICE))


async def test_items_claimed_one_two_and_three_times_fill_those_buckets(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    for claims in (1, 2, 3):
        decided = await decided_after_claims(db, owner_conn, f"cust-{claims}", claims)
        assert decided.outcome is Verdict.APPROVE
    # Pending now: one never claimed, one whose only lease lapsed unnoticed, one released.
    await enqueue_one(db, "kyc", "never-claimed", priority=-1)
    lapsing = await enqueue_one(db, "kyc", "lapses", priority=2)
    await lapse_and_reclaim(db, owner_conn, BOB, 1)
    released = await enqueue_one(db, "kyc", "released", priority=3)
    held = await claim(db, BOB)
    assert held.item.id == released.id
    assert isinstance(await release_lease(db, BOB, str(held.item.id), str(held.lease_token)), Item)

    counts = (await lease_counts(db, [KEY]))[KEY]
    summary = (await summaries(db, [KEY]))[KEY]
    rows = (await reviewers(db, [KEY]))[KEY]

    assert counts.at_decision == [
        LeaseCountBucket(1, 1),
        LeaseCountBucket(2, 1),
        LeaseCountBucket(3, 1),
    ]
    assert counts.pending == [LeaseCountBucket(0, 1), LeaseCountBucket(1, 2)]
    assert lapsing.id != released.id
    # Alice let 1 + 2 leases lapse (noticed by her own next claims), Bob 1 (not noticed yet);
    # 3 decisions, 1 release and 4 lapses ended 8 leases.
    assert (summary.decided, summary.lapsed, summary.released) == (3, 4, 1)
    assert summary.lapsed_lease_share == 4 / 8
    assert summary.arrivals == 6
    assert summary.backlog == 3
    assert [(r.reviewer, r.decided, r.lapsed_leases, r.overturned) for r in rows] == [
        ("alice", 3, 3, 0),
        ("bob", 0, 1, 0),
    ]


async def test_reason_counts_and_shares_leave_overturns_apart(db: Database, kyc_queue: str) -> None:
    verdicts = [
        (Verdict.APPROVE, "documents_ok"),
        (Verdict.APPROVE, "documents_ok"),
        (Verdict.APPROVE, "documents_ok"),
        (Verdict.REJECT, "name_mismatch"),
        (Verdict.ESCALATE, "needs_senior"),
    ]
    decided = []
    for n, (verdict, reason) in enumerate(verdicts):
        await enqueue_one(db, "kyc", f"cust-{n}")
        decided.append(await decide(db, ALICE, await claim(db, ALICE), verdict, reason))
    overturned = await overturn_decision(
        db, APPROVER, OverturnInput(str(decided[0].id), "name_mismatch")
    )
    assert isinstance(overturned, Decision)

    mix = (await reasons(db, [KEY]))[KEY]
    summary = (await summaries(db, [KEY]))[KEY]

    assert mix == [
        ReasonCount("documents_ok", Verdict.APPROVE, 3, 0.6),
        ReasonCount("name_mismatch", Verdict.REJECT, 1, 0.2),
        ReasonCount("needs_senior", Verdict.ESCALATE, 1, 0.2),
    ]
    assert (summary.decided, summary.escalated, summary.overturned) == (5, 1, 1)
    assert [(r.reviewer, r.decided, r.overturned) for r in (await reviewers(db, [KEY]))[KEY]] == [
        ("alice", 5, 1)
    ]


async def test_overturns_count_on_the_window_decisions_they_supersede(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """Overturns are counted from the overturn rows: an overturn of a decision from before
    the window is not the window's, and an overturn of an overturn is not a second one."""
    await enqueue_one(db, "kyc", "before-the-window")
    old = await decide(db, ALICE, await claim(db, ALICE))
    moved = await owner_conn.execute(
        "UPDATE review_decisions SET decided_at = now() - interval '8 days' WHERE id = $1", old.id
    )
    assert moved == "UPDATE 1"
    await enqueue_one(db, "kyc", "in-the-window")
    recent = await decide(db, BOB, await claim(db, BOB))
    for target, reason in ((old, "name_mismatch"), (recent, "name_mismatch")):
        overturned = await overturn_decision(db, APPROVER, OverturnInput(str(target.id), reason))
        assert isinstance(overturned, Decision)
        if target is recent:
            # The overturn of `recent` is overturned in turn, back to approve.
            again = await overturn_decision(
                db, APPROVER, OverturnInput(str(overturned.id), "documents_ok")
            )
            assert isinstance(again, Decision)

    summary = (await summaries(db, [KEY]))[KEY]
    rows = (await reviewers(db, [KEY]))[KEY]

    assert (summary.decided, summary.overturned) == (1, 1)
    assert [(r.reviewer, r.decided, r.overturned) for r in rows] == [("bob", 1, 1)]


async def test_time_to_decision_of_decisions_recorded_before_0015_reads_the_item(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """A decision without the item's enqueue time (recorded before migration 0015 kept it)
    is measured from its item, as before."""
    await decide_with_handling(db, owner_conn, "kept", 60)
    await decide_with_handling(db, owner_conn, "older-row", 120)
    cleared = await owner_conn.execute(
        "UPDATE review_decisions AS d SET item_created_at = NULL FROM review_items AS i "
        "WHERE i.id = d.item_id AND i.external_key = 'older-row'"
    )
    assert cleared == "UPDATE 1"

    elapsed = (await summaries(db, [KEY]))[KEY].time_to_decision

    assert elapsed.samples == 2
    assert elapsed.p50 == pytest.approx(1090, abs=SLACK)
    assert elapsed.max == pytest.approx(1120, abs=SLACK)


async def decide_with_handling(
    db: Database, owner_conn: asyncpg.Connection, key: str, handling_seconds: int
) -> None:
    """A decision whose lease began `handling_seconds` ago, and whose item was enqueued a
    thousand seconds before that (moved in SQL: nobody waits)."""
    await enqueue_one(db, "kyc", key)
    held = await claim(db, ALICE)
    status = await owner_conn.execute(
        "UPDATE review_items SET lease_started_at = now() - make_interval(secs => $2), "
        "created_at = now() - make_interval(secs => $2 + 1000) WHERE id = $1",
        held.item.id,
        float(handling_seconds),
    )
    assert status == "UPDATE 1"
    await decide(db, ALICE, held)


# The slack between moving a lease start and the decision's own clock: a test's few
# statements take milliseconds, never a second.
SLACK = 1.0


async def test_handling_percentiles_follow_the_lease_starts(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    for n in range(1, 11):
        await decide_with_handling(db, owner_conn, f"cust-{n}", 60 * n - 15)

    summary = (await summaries(db, [KEY]))[KEY]

    handling = summary.handling
    assert handling.samples == 10
    # percentile_cont over 45, 105, ... 585: interpolated between neighbours.
    assert handling.p50 == pytest.approx(315, abs=SLACK)
    assert handling.p90 == pytest.approx(531, abs=SLACK)
    assert handling.p99 == pytest.approx(579.6, abs=SLACK)
    assert handling.max == pytest.approx(585, abs=SLACK)
    assert summary.handling_mean_seconds == pytest.approx(315, abs=SLACK)
    elapsed = summary.time_to_decision
    assert elapsed.samples == 10
    assert elapsed.p50 == pytest.approx(1315, abs=SLACK)
    assert elapsed.max == pytest.approx(1585, abs=SLACK)
    # Below the minimum of samples: no recommendation, and the advice says why.
    assert summary.recommended_lease_ttl_seconds is None
    assert f"10 of the {MIN_SAMPLES_FOR_TTL} needed" in summary.lease_ttl_advice(300)
    # 345 s and more ran past the 300 s TTL: 5 of 10.
    assert summary.past_ttl == 5
    assert summary.lease_cut_off_share == 0.5


async def test_the_ttl_recommendation_sits_above_the_p99(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    for n in range(1, MIN_SAMPLES_FOR_TTL + 1):
        await decide_with_handling(db, owner_conn, f"cust-{n}", 10 * n - 5)

    summary = (await summaries(db, [KEY]))[KEY]

    p99 = summary.handling.p99
    assert p99 is not None
    # percentile_cont over 5, 15, ... 495.
    assert p99 == pytest.approx(490.1, abs=SLACK)
    # 490.1 * 1.25 = 612.6, rounded up to a whole minute.
    assert summary.recommended_lease_ttl_seconds == 660
    assert summary.recommended_lease_ttl_seconds > p99
    # 305 s to 495 s ran past the 300 s TTL: 20 of 50.
    assert summary.lease_cut_off_share == 0.4
    assert summary.lease_ttl_advice(300) == (
        "Leases last 5 min. 99% of reviews take at most 8 min 11 s hands-on: a lease of "
        "11 min would fit. 40% of recent reviews (20 of 50) ran past 5 min and finished "
        "only because their lease was renewed."
    )


async def test_a_reviewer_counts_its_own_work_only(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    for n, who in enumerate((ALICE, ALICE, BOB)):
        await enqueue_one(db, "kyc", f"cust-{n}")
        await decide(db, who, await claim(db, who))
    await enqueue_one(db, "kyc", "waiting")
    own = measure_key(BOB, "kyc", DEFAULT_WINDOW_SECONDS)
    assert own == MeasureKey("kyc", DEFAULT_WINDOW_SECONDS, "bob")

    summary = (await summaries(db, [own]))[own]
    rows = (await reviewers(db, [own]))[own]

    assert (summary.decided, summary.arrivals, summary.backlog) == (1, 4, 1)
    assert [r.reviewer for r in rows] == ["bob"]


def test_who_may_read_which_figures() -> None:
    window = DEFAULT_WINDOW_SECONDS
    assert measure_key(MANAGER, "kyc", window) == MeasureKey("kyc", window, None)
    assert measure_key(Principal("ada", Role.ADMIN, frozenset()), "kyc", window) == KEY
    assert measure_key(APPROVER, "kyc", window) == MeasureKey("kyc", window, APPROVER.user)
    for refused in (
        measure_key(INTEGRATION, "kyc", window),
        measure_key(Principal("max", Role.MANAGER, frozenset({"payouts"})), "kyc", window),
        measure_key(ALICE, "payouts", window),
    ):
        assert isinstance(refused, NotPermitted), refused
    assert isinstance(measure_key(MANAGER, "kyc", 0), InvalidInput)


async def test_queues_are_read_together_and_apart(db: Database, kyc_queue: str) -> None:
    await enqueue_one(db, "kyc", "cust-1")
    await decide(db, ALICE, await claim(db, ALICE))
    keys = [
        KEY,
        MeasureKey("kyc-senior", DEFAULT_WINDOW_SECONDS, None),
        MeasureKey("kyc", 60, None),
    ]

    found = await summaries(db, keys)

    assert {key: s.decided for key, s in found.items()} == {keys[0]: 1, keys[1]: 0, keys[2]: 1}
