"""Four-eyes before the effect (migration 0020): a decision the queue's second review names is
recorded provisional and not applied; its item waits in the second-review queue for anyone
but its decider, who confirms it (it takes effect) or overrides it (a decision of their own
supersedes it). Both are fenced by the second reviewer's lease and the evidence, and the
first decider is refused whatever lease they hold."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest

from server.domain.failures import (
    EvidenceChanged,
    InvalidInput,
    InvalidReasonCode,
    NotPermitted,
    QueueEmpty,
    StaleLease,
)
from server.domain.model import Claim, Decision, DecisionStatus, Principal, Queue, Role, Verdict
from server.domain.quality.second_review import confirm_decision, override_decision
from server.domain.reads import decisions_by_item_ids
from server.domain.review import live
from server.domain.review.decisions import (
    OverturnInput,
    Replayed,
    overturn_decision,
    submit_decision,
)
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, SecondReviewSettings, configure_queue
from server.domain.timeline.events import PageKey, TimelineKind, events_pages
from server.events.channels import EventKind, parse_event
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, TestDatabase, reviewer
from tests.integration.helpers import (
    claim,
    decide,
    enqueue_one,
    expire_lease,
    item_row,
    listening,
    snapshot,
    verdict_for,
)
from tests.integration.second_review import (
    ALICE,
    BOB,
    CAROL,
    SECOND_REVIEW_QUEUE,
    applications,
    confirm,
    confirmation,
    override,
    overriding,
    provisional_rejection,
    require_second_review,
)


@pytest.fixture
async def four_eyes(db: Database, kyc_queue: str) -> Queue:
    return await require_second_review(db)


async def both_answers_refused(
    db: Database, owner: asyncpg.Connection, bobs: Claim, refusal: type
) -> None:
    """Bob's confirmation and his override, under his claim, are each refused so, and
    neither writes anything."""
    before = await snapshot(owner)
    assert isinstance(await confirm_decision(db, BOB, confirmation(bobs)), refusal)
    assert isinstance(await override_decision(db, BOB, overriding(bobs)), refusal)
    assert await snapshot(owner) == before


# --- the setting ---------------------------------------------------------------------------


async def test_the_setting_is_stored_read_back_and_turned_off(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    queue = await require_second_review(db, min_priority=50)

    assert queue.second_review is not None
    assert queue.second_review.verdicts == (Verdict.REJECT,)
    assert queue.second_review.min_priority == 50
    assert queue.second_review.queue == SECOND_REVIEW_QUEUE
    created = await owner_conn.fetchrow(
        "SELECT holder_role FROM queues WHERE name = $1", SECOND_REVIEW_QUEUE
    )
    assert created is not None
    assert created["holder_role"] == Role.REVIEWER.value

    # Another setting leaves it as it is; no verdicts turn it off.
    kept = await configure_queue(db, ADMIN, QueueSettings("kyc", lease_ttl_seconds=120))
    assert isinstance(kept, Queue)
    assert kept.second_review == queue.second_review
    off = await configure_queue(
        db, ADMIN, QueueSettings("kyc", second_review=SecondReviewSettings(()))
    )
    assert isinstance(off, Queue)
    assert off.second_review is None


async def test_a_named_second_review_queue_is_used_and_created(
    db: Database, kyc_queue: str
) -> None:
    result = await configure_queue(
        db,
        ADMIN,
        QueueSettings(
            "kyc", second_review=SecondReviewSettings((Verdict.APPROVE,), queue="kyc-four-eyes")
        ),
    )
    assert isinstance(result, Queue), result
    assert result.second_review is not None
    assert result.second_review.queue == "kyc-four-eyes"


@pytest.mark.parametrize(
    ("second", "field"),
    [
        (SecondReviewSettings((Verdict.ESCALATE,)), "secondReview.verdicts"),
        (SecondReviewSettings((Verdict.REJECT,), queue="kyc"), "secondReview.queue"),
        (SecondReviewSettings((Verdict.REJECT,), queue="Not A Name"), "secondReview.queue"),
        (SecondReviewSettings((Verdict.REJECT,), min_priority=10**7), "secondReview.minPriority"),
        # An approval queue is worked by approvers.
        (SecondReviewSettings((Verdict.REJECT,), queue="supplier-approvals"), "secondReview.queue"),
    ],
    ids=["escalate", "itself", "bad-name", "priority", "approver-queue"],
)
async def test_a_bad_setting_is_refused_and_writes_nothing(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    second: SecondReviewSettings,
    field: str,
) -> None:
    await owner_conn.execute(
        "INSERT INTO queues (name, holder_role) VALUES ('supplier-approvals', 'approver')"
    )
    before = await snapshot(owner_conn)

    result = await configure_queue(db, ADMIN, QueueSettings("kyc", second_review=second))

    assert isinstance(result, InvalidInput), result
    assert result.field == field
    assert await snapshot(owner_conn) == before


async def test_a_token_must_cover_the_second_review_queue(db: Database, kyc_queue: str) -> None:
    scoped = Principal("kyc-admin", Role.ADMIN, frozenset({"kyc"}))
    result = await configure_queue(
        db, scoped, QueueSettings("kyc", second_review=SecondReviewSettings((Verdict.REJECT,)))
    )
    assert isinstance(result, NotPermitted), result


# --- the provisional decision --------------------------------------------------------------


async def test_a_named_verdict_is_provisional_and_its_item_waits_for_a_second_reviewer(
    db: Database,
    four_eyes: Queue,
    owner_conn: asyncpg.Connection,
    test_database: TestDatabase,
) -> None:
    item = await enqueue_one(db, "kyc", "cust-1")
    claimed = await claim(db, ALICE)
    async with listening(test_database) as listener:
        hints = await listener.events_of(
            decide(db, ALICE, claimed, Verdict.REJECT, "name_mismatch")
        )

    decision = await _only_decision(db, item.id)
    assert decision.provisional
    assert decision.status is DecisionStatus.PROVISIONAL
    assert decision.queue == "kyc"
    assert decision.confirmed_by is None
    # Not on the apply work list.
    assert await applications(owner_conn) == []
    row = await item_row(owner_conn, item.id)
    assert (row["queue"], row["state"], row["lease_token"], row["lease_owner"]) == (
        SECOND_REVIEW_QUEUE,
        "pending",
        None,
        None,
    )
    assert (row["barred_claimer"], row["awaiting_decision_id"]) == ("alice", decision.id)
    assert row["decided_at"] is None
    assert row["priority"] == item.priority
    # One hint, routed to both queues: the item left one and arrived in the other.
    (event,) = [parse_event(hint) for hint in hints]
    assert event is not None
    assert (event.kind, event.queue, event.from_queue) == (
        EventKind.SECOND_REVIEW,
        SECOND_REVIEW_QUEUE,
        "kyc",
    )
    assert (event.item_id, event.decision_id) == (item.id, decision.id)
    assert set(event.queues) == {"kyc", SECOND_REVIEW_QUEUE}


async def test_other_verdicts_and_lower_priorities_take_effect_alone(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await require_second_review(db, min_priority=50)
    await enqueue_one(db, "kyc", "low", priority=10)
    await enqueue_one(db, "kyc", "high-approved", priority=90)

    approved = await decide(db, ALICE, await claim(db, ALICE))  # priority 90, APPROVE
    rejected = await decide(db, ALICE, await claim(db, ALICE), Verdict.REJECT, "name_mismatch")

    for decision in (approved, rejected):
        assert not decision.provisional
        assert decision.status is DecisionStatus.EFFECTIVE
        row = await item_row(owner_conn, decision.item_id)
        assert (row["state"], row["queue"], row["awaiting_decision_id"]) == ("decided", "kyc", None)
        assert row["barred_claimer"] is None
    assert await applications(owner_conn) == sorted([approved.id, rejected.id])


async def test_the_priority_threshold_includes_its_own_value(db: Database, kyc_queue: str) -> None:
    await require_second_review(db, min_priority=50)
    decision = await provisional_rejection(db, priority=50)
    assert decision.status is DecisionStatus.PROVISIONAL


# --- who may take it -----------------------------------------------------------------------


async def test_the_first_decider_is_never_handed_the_item_and_another_reviewer_is(
    db: Database, four_eyes: Queue
) -> None:
    decision = await provisional_rejection(db)

    assert isinstance(await claim_next(db, ALICE, SECOND_REVIEW_QUEUE), QueueEmpty)
    claimed = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    assert claimed.item.id == decision.item_id
    assert claimed.item.awaiting_decision_id == decision.id
    assert claimed.evidence_hash == decision.evidence_hash


async def test_the_first_decider_may_not_confirm_or_override_even_holding_a_lease(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    decision = await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    # With the second reviewer's token: refused as the decider, not as a stale lease.
    before = await snapshot(owner_conn)
    for attempt in (
        confirm_decision(db, ALICE, confirmation(bobs)),
        override_decision(db, ALICE, overriding(bobs)),
    ):
        assert isinstance(await attempt, NotPermitted)
    assert await snapshot(owner_conn) == before

    # Somehow holding the lease herself (the claim never hands it to her: moved here by SQL).
    await owner_conn.execute(
        "UPDATE review_items SET lease_owner = 'alice' WHERE id = $1", decision.item_id
    )
    before = await snapshot(owner_conn)
    for attempt in (
        confirm_decision(db, ALICE, confirmation(bobs)),
        override_decision(db, ALICE, overriding(bobs)),
    ):
        result = await attempt
        assert isinstance(result, NotPermitted), result
    assert await snapshot(owner_conn) == before
    assert await applications(owner_conn) == []


# --- confirmation --------------------------------------------------------------------------


async def test_a_confirmation_makes_the_decision_effective_and_enlists_it(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    decision = await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)

    async with listening(test_database) as listener:
        hints = await listener.events_of(confirm(db, BOB, bobs))

    confirmed = await _only_decision(db, decision.item_id)
    assert confirmed.id == decision.id
    assert confirmed.status is DecisionStatus.EFFECTIVE
    assert confirmed.confirmed_by == "bob"
    assert confirmed.confirmed_at is not None
    assert await applications(owner_conn) == [decision.id]
    application = await owner_conn.fetchrow(
        "SELECT queue, decided_at FROM decision_applications WHERE decision_id = $1", decision.id
    )
    assert application is not None
    assert (application["queue"], application["decided_at"]) == ("kyc", confirmed.confirmed_at)
    row = await item_row(owner_conn, decision.item_id)
    assert (row["state"], row["lease_token"], row["awaiting_decision_id"]) == (
        "decided",
        None,
        None,
    )
    record = await owner_conn.fetchrow("SELECT * FROM decision_confirmations")
    assert record is not None
    assert (record["decision_id"], record["confirmed_by"], record["lease_token"]) == (
        decision.id,
        "bob",
        bobs.lease_token,
    )
    assert (record["queue"], record["review_queue"]) == ("kyc", SECOND_REVIEW_QUEUE)
    (event,) = [parse_event(hint) for hint in hints]
    assert event is not None
    assert (event.kind, event.queue, event.decision_id) == (
        EventKind.DECIDED,
        SECOND_REVIEW_QUEUE,
        decision.id,
    )
    assert set(event.queues) == {"kyc", SECOND_REVIEW_QUEUE}


async def test_a_retried_confirmation_is_answered_with_the_recorded_one(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    first = await confirm(db, BOB, bobs)
    before = await snapshot(owner_conn)

    again = await confirm_decision(db, BOB, confirmation(bobs))
    assert isinstance(again, Replayed)
    assert again.decision == first
    # Anyone else presenting the token learns nothing of it.
    assert isinstance(await confirm_decision(db, CAROL, confirmation(bobs)), StaleLease)
    assert await snapshot(owner_conn) == before


async def test_a_stale_lease_confirms_nothing(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    decision = await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    await expire_lease(owner_conn, decision.item_id)

    await both_answers_refused(db, owner_conn, bobs, StaleLease)
    assert await applications(owner_conn) == []


async def test_evidence_changed_since_the_first_decision_cannot_be_confirmed(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    decision = await provisional_rejection(db, payload={"name": "Ann"})
    # The integration re-uploads the same key: the waiting item takes the new evidence.
    reuploaded = await enqueue_items(db, INTEGRATION, "kyc", [NewItem("cust-1", {"name": "Anne"})])
    assert isinstance(reuploaded, list)
    assert reuploaded[0].evidence_updated
    new_hash = reuploaded[0].item.evidence_hash
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    assert bobs.evidence_hash == new_hash != decision.evidence_hash
    before = await snapshot(owner_conn)

    # Neither the evidence shown now nor the evidence decided on confirms it.
    for evidence in (new_hash, decision.evidence_hash):
        result = await confirm_decision(db, BOB, confirmation(bobs, evidence))
        assert isinstance(result, EvidenceChanged), result
        assert result.current_evidence_hash == new_hash
    assert await snapshot(owner_conn) == before
    assert await applications(owner_conn) == []

    # An override is a decision of its own, on the evidence as it is now.
    replaced = await override(db, BOB, bobs)
    assert replaced.evidence_hash == new_hash
    assert await applications(owner_conn) == [replaced.id]


async def test_evidence_changed_under_the_second_reviewer_writes_nothing(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    await provisional_rejection(db, payload={"name": "Ann"})
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    await enqueue_items(db, INTEGRATION, "kyc", [NewItem("cust-1", {"name": "Anne"})])

    await both_answers_refused(db, owner_conn, bobs, EvidenceChanged)


# --- override ------------------------------------------------------------------------------


async def test_an_override_supersedes_the_provisional_decision_and_alone_is_enlisted(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    decision = await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)

    result = await override_decision(
        db, BOB, overriding(bobs, Verdict.APPROVE, "documents_ok", note="papers fine")
    )

    assert isinstance(result, Decision), result
    assert (result.outcome, result.reason_code, result.note, result.reviewer) == (
        Verdict.APPROVE,
        "documents_ok",
        "papers fine",
        "bob",
    )
    assert result.supersedes == decision.id
    assert result.is_override
    assert not result.is_overturn
    assert (result.queue, result.review_queue) == ("kyc", SECOND_REVIEW_QUEUE)
    first, second = await _decisions(db, decision.item_id)
    assert first.status is DecisionStatus.SUPERSEDED
    assert first.superseded_by == result.id
    assert second.status is DecisionStatus.EFFECTIVE
    assert second.confirmed_by is None
    assert await applications(owner_conn) == [result.id]
    row = await item_row(owner_conn, decision.item_id)
    assert (row["state"], row["awaiting_decision_id"]) == ("decided", None)

    # A retry after a lost answer is answered with it.
    again = await override_decision(
        db, BOB, overriding(bobs, Verdict.APPROVE, "documents_ok", note="papers fine")
    )
    assert isinstance(again, Replayed)
    assert again.decision.id == result.id


@pytest.mark.parametrize(
    ("verdict", "reason_code", "refusal"),
    [
        (Verdict.ESCALATE, "needs_senior", InvalidInput),
        (Verdict.APPROVE, "name_mismatch", InvalidReasonCode),
        (Verdict.APPROVE, "no_such_code", InvalidReasonCode),
    ],
    ids=["escalate", "wrong-verdict", "unknown-code"],
)
async def test_an_override_outside_the_catalogue_or_escalating_writes_nothing(
    db: Database,
    four_eyes: Queue,
    owner_conn: asyncpg.Connection,
    verdict: Verdict,
    reason_code: str,
    refusal: type,
) -> None:
    await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    before = await snapshot(owner_conn)

    result = await override_decision(db, BOB, overriding(bobs, verdict, reason_code))

    assert isinstance(result, refusal), result
    if isinstance(result, InvalidReasonCode):
        # Checked against the catalogue of the decision's own queue.
        assert result.queue == "kyc"
    assert await snapshot(owner_conn) == before


async def test_a_reason_that_requires_a_note_needs_one_in_an_override(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    await owner_conn.execute(
        "UPDATE reason_codes SET requires_note = true WHERE queue = 'kyc' AND code = 'documents_ok'"
    )
    await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    before = await snapshot(owner_conn)

    result = await override_decision(db, BOB, overriding(bobs, note="  "))

    assert isinstance(result, InvalidInput), result

    assert result.field == "note", result
    assert await snapshot(owner_conn) == before
    assert isinstance(await override_decision(db, BOB, overriding(bobs, note="ok")), Decision)


# --- what else the waiting item refuses ----------------------------------------------------


async def test_submit_decision_is_refused_on_an_item_waiting_for_second_review(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    before = await snapshot(owner_conn)

    result = await submit_decision(db, BOB, verdict_for(bobs, Verdict.APPROVE))

    assert isinstance(result, InvalidInput), result

    assert result.field == "itemId", result
    assert await snapshot(owner_conn) == before


async def test_only_an_effective_decision_is_overturned(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    decision = await provisional_rejection(db)
    before = await snapshot(owner_conn)

    refused = await overturn_decision(db, APPROVER, OverturnInput(str(decision.id), "documents_ok"))
    assert isinstance(refused, InvalidInput), refused
    assert refused.field == "decisionId", refused
    assert await snapshot(owner_conn) == before

    await confirm(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))
    overturned = await overturn_decision(
        db, APPROVER, OverturnInput(str(decision.id), "documents_ok")
    )
    assert isinstance(overturned, Decision), overturned
    first, _ = await _decisions(db, decision.item_id)
    assert first.status is DecisionStatus.SUPERSEDED
    assert first.confirmed_by == "bob"
    assert await applications(owner_conn) == [decision.id, overturned.id]


async def test_a_decision_with_second_review_off_again_is_unchanged(
    db: Database, four_eyes: Queue
) -> None:
    waiting = await provisional_rejection(db)
    await configure_queue(db, ADMIN, QueueSettings("kyc", second_review=SecondReviewSettings(())))
    # The one waiting keeps waiting; new decisions take effect alone.
    await enqueue_one(db, "kyc", "cust-2")
    later = await decide(db, ALICE, await claim(db, ALICE), Verdict.REJECT, "name_mismatch")
    assert later.status is DecisionStatus.EFFECTIVE
    assert (await _only_decision(db, waiting.item_id)).status is DecisionStatus.PROVISIONAL


# --- concurrency ---------------------------------------------------------------------------


async def test_two_second_reviewers_claiming_at_once_get_it_once(
    db: Database, four_eyes: Queue
) -> None:
    decision = await provisional_rejection(db)

    results = await asyncio.gather(
        *(claim_next(db, who, SECOND_REVIEW_QUEUE) for who in (BOB, CAROL) for _ in range(3))
    )

    claims = [r for r in results if isinstance(r, Claim)]
    assert len(claims) == 1
    assert claims[0].item.id == decision.item_id
    assert all(isinstance(r, QueueEmpty) for r in results if not isinstance(r, Claim))


async def test_racing_second_reviews_give_exactly_one_outcome(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    """Bob's lease lapses and Carol takes the item: both then answer at once, each with a
    confirmation and an override. Only Carol's live lease may write, and only once."""
    decision = await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    await expire_lease(owner_conn, decision.item_id)
    carols = await claim(db, CAROL, SECOND_REVIEW_QUEUE)

    results = await asyncio.gather(
        confirm_decision(db, BOB, confirmation(bobs)),
        override_decision(db, BOB, overriding(bobs)),
        *(confirm_decision(db, CAROL, confirmation(carols)) for _ in range(3)),
        *(override_decision(db, CAROL, overriding(carols)) for _ in range(3)),
    )

    bob_results, carol_results = results[:2], results[2:]
    assert all(isinstance(r, StaleLease) for r in bob_results), bob_results
    written = [r for r in carol_results if isinstance(r, Decision)]
    assert len(written) == 1, carol_results
    # The others lost the row to it: stale, or (the same kind of write) a replay of it.
    for other in carol_results:
        if other is written[0]:
            continue
        assert isinstance(other, StaleLease | Replayed), other
    confirmations = await owner_conn.fetchval("SELECT count(*) FROM decision_confirmations")
    overrides = await owner_conn.fetchval(
        "SELECT count(*) FROM review_decisions WHERE supersedes IS NOT NULL"
    )
    assert confirmations + overrides == 1
    assert len(await applications(owner_conn)) == 1


# --- reads ---------------------------------------------------------------------------------


async def test_the_timeline_shows_the_second_review(db: Database, four_eyes: Queue) -> None:
    decision = await provisional_rejection(db)
    await confirm(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))

    key = PageKey(decision.item_id, None, 50)
    events = (await events_pages(db, [key]))[key]

    story = [(e.kind, e.queue, e.actor) for e in events]
    assert story == [
        (TimelineKind.ENQUEUED, "kyc", INTEGRATION.user),
        (TimelineKind.CLAIMED, "kyc", "alice"),
        (TimelineKind.SECOND_REVIEW, "kyc", "alice"),
        (TimelineKind.CLAIMED, SECOND_REVIEW_QUEUE, "bob"),
        (TimelineKind.CONFIRMED, SECOND_REVIEW_QUEUE, "bob"),
    ]
    sent = events[2]
    assert (sent.from_queue, sent.to_queue, sent.decision_id) == (
        "kyc",
        SECOND_REVIEW_QUEUE,
        decision.id,
    )
    assert events[4].decision_id == decision.id
    assert events[3].lease is not None
    assert events[4].lease == events[3].lease


async def test_the_timeline_shows_an_override_in_the_queue_it_was_made_in(
    db: Database, four_eyes: Queue
) -> None:
    decision = await provisional_rejection(db)
    replaced = await override(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))

    key = PageKey(decision.item_id, None, 50)
    events = (await events_pages(db, [key]))[key]

    assert [(e.kind, e.queue, e.decision_id) for e in events[-2:]] == [
        (TimelineKind.CLAIMED, SECOND_REVIEW_QUEUE, None),
        (TimelineKind.OVERRIDDEN, SECOND_REVIEW_QUEUE, replaced.id),
    ]


async def test_the_decision_stream_delivers_decisions_when_they_take_effect(
    db: Database, four_eyes: Queue
) -> None:
    start = await live.stream_now(db)

    async def delivered(
        count: int, after: live.StreamPosition = start
    ) -> list[tuple[int, DecisionStatus]]:
        """The stream's page once it holds `count` decisions. A commit becomes deliverable
        when every older transaction of the cluster (other tests' too) has ended, which
        nothing announces: the stream itself looks again every second, and so does this."""
        for _ in range(300):
            page = await live.decisions_after(db, "kyc", after, 100)
            if len(page) >= count:
                return [(d.id, d.status) for _, d in page]
            await asyncio.sleep(0.1)
        raise AssertionError(f"fewer than {count} decisions delivered: {page}")

    confirmed = await provisional_rejection(db, "confirmed")
    overridden = await provisional_rejection(db, "overridden")
    await enqueue_one(db, "kyc", "plain")
    plain = await decide(db, ALICE, await claim(db, ALICE))
    # Neither provisional decision is delivered.
    assert await delivered(1) == [(plain.id, DecisionStatus.EFFECTIVE)]

    first = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    second = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    by_item = {first.item.id: first, second.item.id: second}
    replaced = await override(db, BOB, by_item[overridden.item_id])
    await confirm(db, BOB, by_item[confirmed.item_id])

    # In the order they took effect; the overridden one never.
    assert await delivered(3) == [
        (plain.id, DecisionStatus.EFFECTIVE),
        (replaced.id, DecisionStatus.EFFECTIVE),
        (confirmed.id, DecisionStatus.EFFECTIVE),
    ]
    # Resuming after the confirmed one starts at its confirmation.
    resumed = await live.stream_start(db, "kyc", str(confirmed.id))
    assert isinstance(resumed, live.StreamPosition)
    assert await live.decisions_after(db, "kyc", resumed, 100) == []
    resumed_mid = await live.stream_start(db, "kyc", str(replaced.id))
    assert isinstance(resumed_mid, live.StreamPosition)
    assert await delivered(1, resumed_mid) == [(confirmed.id, DecisionStatus.EFFECTIVE)]
    # A decision the stream never delivered is no place to resume from.
    assert isinstance(await live.stream_start(db, "kyc", str(overridden.id)), InvalidInput)


async def test_confirmations_are_append_only(
    db: Database, four_eyes: Queue, app_conn: asyncpg.Connection
) -> None:
    await provisional_rejection(db)
    await confirm(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))

    for statement in (
        "UPDATE decision_confirmations SET confirmed_by = 'mallory'",
        "DELETE FROM decision_confirmations",
        "TRUNCATE decision_confirmations",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_conn.execute(statement)
    assert await app_conn.fetchval("SELECT confirmed_by FROM decision_confirmations") == "bob"


async def test_a_second_reviewer_outside_the_queue_is_told_nothing(
    db: Database, four_eyes: Queue, owner_conn: asyncpg.Connection
) -> None:
    await provisional_rejection(db)
    bobs = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    outsider = reviewer("bob", "kyc")
    before = await snapshot(owner_conn)

    result = await confirm_decision(db, outsider, confirmation(bobs))

    assert isinstance(result, InvalidInput), result

    assert result.field == "itemId", result
    assert json.dumps(result.message).count("kyc-second-review") == 0
    assert await snapshot(owner_conn) == before


async def _decisions(db: Database, item_id: int) -> list[Decision]:
    return (await decisions_by_item_ids(db, [item_id]))[item_id]


async def _only_decision(db: Database, item_id: int) -> Decision:
    (decision,) = await _decisions(db, item_id)
    return decision
