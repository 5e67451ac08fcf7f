"""QA sampling (migration 0021): which decisions are copied to the QA queue, who may check
them, and what a check writes. Real PostgreSQL, through the domain functions."""

from __future__ import annotations

import asyncio
import math

import asyncpg
import pytest

from server.domain.failures import (
    InvalidInput,
    InvalidReasonCode,
    NotPermitted,
    QueueEmpty,
    StaleLease,
)
from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.domain.measures.queues import MeasureKey, QualityCounts, quality
from server.domain.model import Claim, Decision, Principal, Role, Verdict
from server.domain.quality import qa
from server.domain.quality.qa import QaResult, QaResultInput, qa_draw, record_qa_result
from server.domain.review.decisions import OverturnInput, overturn_decision, submit_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.domain.timeline.events import PageKey, TimelineKind, events_pages
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, TestDatabase, reviewer
from tests.integration.helpers import (
    Snapshot,
    claim,
    decide,
    enqueue_one,
    expire_lease,
    listening,
    snapshot,
    verdict_for,
)

QA_QUEUE = "kyc-qa"
ALICE = reviewer("alice", "kyc", QA_QUEUE)
BOB = reviewer("bob", "kyc", QA_QUEUE)
CAROL = reviewer("carol", "kyc", QA_QUEUE)
# The QA queue's catalogue: approve = may be given when agreeing, reject = when disagreeing.
AGREE, WRONG_OUTCOME, UNCLEAR = "qa_agree", "qa_wrong_outcome", "qa_unclear"


async def configure(db: Database, rate: float) -> None:
    configured = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_sample_rate=rate))
    assert not hasattr(configured, "message"), configured


@pytest.fixture
async def qa_queue(db: Database, kyc_queue: str) -> str:
    """kyc samples every decision (rate 1) into kyc-qa, whose catalogue has an agreeing
    code, a disagreeing one, and a disagreeing one that requires a note."""
    await configure(db, 1.0)
    for code, verdicts, requires_note in (
        (AGREE, [Verdict.APPROVE], False),
        (WRONG_OUTCOME, [Verdict.REJECT], False),
        (UNCLEAR, [Verdict.REJECT], True),
    ):
        defined = await define_reason_code(
            db,
            ADMIN,
            queue=QA_QUEUE,
            code=code,
            label=code,
            verdicts=verdicts,
            requires_note=requires_note,
        )
        assert not hasattr(defined, "message"), defined
    return QA_QUEUE


async def sampled_decision(db: Database, key: str, decider: Principal = ALICE) -> Decision:
    await enqueue_one(db, "kyc", key, payload={"customer": key})
    return await decide(db, decider, await claim(db, decider))


def answer(
    claimed: Claim, agrees: bool = True, code: str = AGREE, note: str | None = None
) -> QaResultInput:
    return QaResultInput(str(claimed.item.id), str(claimed.lease_token), agrees, code, note)


async def check(
    db: Database, checker: Principal, agrees: bool = True, code: str = AGREE
) -> QaResult:
    claimed = await claim(db, checker, QA_QUEUE)
    result = await record_qa_result(db, checker, answer(claimed, agrees, code))
    assert isinstance(result, QaResult), result
    return result


async def qa_results(owner: asyncpg.Connection) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await owner.fetch("SELECT * FROM qa_results ORDER BY id")
    return rows


async def copy_claimed_by_bob(db: Database) -> Claim:
    """Alice's decision on a fresh item, sampled: its QA copy, claimed by bob."""
    await sampled_decision(db, "cust-1")
    return await claim(db, BOB, QA_QUEUE)


async def wrote_nothing(owner: asyncpg.Connection, before: Snapshot) -> None:
    """No row changed since `before`, and no QA result was recorded."""
    assert await snapshot(owner) == before
    assert await qa_results(owner) == []


# --- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("rate", [-0.01, 1.01, math.nan, math.inf])
async def test_a_rate_outside_0_to_1_is_refused_naming_the_field(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, rate: float
) -> None:
    before = await snapshot(owner_conn)

    refused = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_sample_rate=rate))

    assert isinstance(refused, InvalidInput)
    assert refused.field == "qaSampleRate"
    assert await snapshot(owner_conn) == before


async def test_a_rate_creates_the_default_qa_queue_for_reviewers_and_0_turns_it_off(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    configured = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_sample_rate=0.1))

    assert not isinstance(configured, InvalidInput | NotPermitted)
    assert (configured.qa_sample_rate, configured.qa_queue) == (0.1, "kyc-qa")
    made = await owner_conn.fetchrow("SELECT * FROM queues WHERE name = 'kyc-qa'")
    assert made is not None
    assert made["holder_role"] == "reviewer"

    off = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_sample_rate=0))
    assert not isinstance(off, InvalidInput | NotPermitted)
    # Off, and the QA queue stays named for when it is turned on again.
    assert (off.qa_sample_rate, off.qa_queue) == (0.0, "kyc-qa")


async def test_a_named_qa_queue_must_be_a_reviewers_queue_the_token_covers(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await owner_conn.execute("INSERT INTO queues (name, holder_role) VALUES ('apr', 'approver')")
    before = await snapshot(owner_conn)

    approvers = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_queue="apr"))
    itself = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_queue="kyc"))
    scoped = Principal("scoped-admin", Role.ADMIN, frozenset({"kyc"}))
    uncovered = await configure_queue(db, scoped, QueueSettings("kyc", qa_sample_rate=0.5))

    assert isinstance(approvers, InvalidInput)
    assert approvers.field == "qaQueue"
    assert isinstance(itself, InvalidInput)
    assert itself.field == "qaQueue"
    assert isinstance(uncovered, NotPermitted)
    assert "kyc-qa" in uncovered.message
    assert await snapshot(owner_conn) == before

    named = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_queue="kyc-check"))
    assert not isinstance(named, InvalidInput | NotPermitted)
    assert (named.qa_sample_rate, named.qa_queue) == (0.0, "kyc-check")


# --- the draw --------------------------------------------------------------------------


async def test_the_sql_draw_is_the_python_draw_and_lies_in_0_to_1(
    owner_conn: asyncpg.Connection,
) -> None:
    ids = [1, 2, 3, 200, 12_345, 2**31, 2**62, 2**63 - 1]
    rows = await owner_conn.fetch(
        "SELECT id, casework_qa_draw(id) AS draw FROM unnest($1::bigint[]) AS id", ids
    )

    assert {row["id"]: row["draw"] for row in rows} == {i: qa_draw(i) for i in ids}
    assert all(0 <= row["draw"] < 1 for row in rows)
    volatility = await owner_conn.fetchval(
        "SELECT provolatile::text FROM pg_proc WHERE proname = 'casework_qa_draw'"
    )
    assert volatility == "i"


DECISIONS = 2000
RATE = 0.1
POOL = [reviewer(f"r{n}", "kyc", QA_QUEUE) for n in range(5)]


async def work_until_empty(db: Database, who: Principal, out: list[Decision]) -> None:
    """Claims and decides kyc items until none is left: approve or reject by item id."""
    while True:
        claimed = await claim_next(db, who, "kyc")
        if isinstance(claimed, QueueEmpty):
            return
        assert isinstance(claimed, Claim), claimed
        rejects = claimed.item.id % 3 == 0
        out.append(
            await decide(
                db,
                who,
                claimed,
                Verdict.REJECT if rejects else Verdict.APPROVE,
                "name_mismatch" if rejects else "documents_ok",
            )
        )


async def test_a_rate_of_a_tenth_samples_about_200_of_2000_and_exactly_those_the_draw_names(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await configure(db, RATE)
    for start in range(0, DECISIONS, 1000):
        batch = [NewItem(f"cust-{n}", {"n": n}, priority=n % 7) for n in range(start, start + 1000)]
        assert isinstance(await enqueue_items(db, INTEGRATION, "kyc", batch), list)
    decided: list[Decision] = []

    await asyncio.gather(*(work_until_empty(db, who, decided) for who in POOL))

    assert len(decided) == DECISIONS
    copies = await owner_conn.fetch(
        "SELECT c.*, d.reviewer, i.payload AS item_payload, i.priority AS item_priority "
        "FROM review_items AS c JOIN review_decisions AS d ON d.id = c.qa_of "
        "JOIN review_items AS i ON i.id = d.item_id WHERE c.kind = 'qa'"
    )
    sampled = {row["qa_of"] for row in copies}
    # Recomputed apart from the database, from the ids alone: the same set on any re-run.
    predicted = {d.id for d in decided if qa_draw(d.id) < RATE}
    assert sampled == predicted
    recomputed = await owner_conn.fetch(
        "SELECT id FROM review_decisions WHERE queue = 'kyc' AND casework_qa_draw(id) < $1", RATE
    )
    assert {row["id"] for row in recomputed} == predicted
    # Binomial(2000, 0.1): mean 200, standard deviation 13.4; 45 is more than 3 of them.
    assert abs(len(sampled) - DECISIONS * RATE) <= 45, len(sampled)
    for row in copies:
        assert row["queue"] == row["origin_queue"] == QA_QUEUE
        assert row["barred_claimer"] == row["reviewer"]
        assert row["payload"] == row["item_payload"]
        assert row["priority"] == row["item_priority"]
        assert row["external_key"] == f"qa-of-decision-{row['qa_of']}"
        assert row["state"] == "pending"
    # Every decision went on the apply work list, sampled or not: QA holds nothing up.
    enlisted = await owner_conn.fetchval(
        "SELECT count(*) FROM decision_applications WHERE decision_id = ANY ($1::bigint[])",
        [d.id for d in decided],
    )
    assert enlisted == DECISIONS


async def test_escalations_overturns_and_queues_without_a_rate_are_never_sampled(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue_one(db, "kyc", "escalated")
    escalated = await decide(db, ALICE, await claim(db, ALICE), Verdict.ESCALATE, "needs_senior")
    # kyc-senior has no rate: the escalated item decided there is not sampled either.
    senior = reviewer("sam", "kyc-senior")
    in_senior = await decide(db, senior, await claim(db, senior, "kyc-senior"))
    approved = await sampled_decision(db, "approved")
    overturn = await overturn_decision(
        db, APPROVER, OverturnInput(str(approved.id), "name_mismatch")
    )
    assert isinstance(overturn, Decision)

    copies = await owner_conn.fetch("SELECT qa_of FROM review_items WHERE kind = 'qa'")

    assert {row["qa_of"] for row in copies} == {approved.id}
    assert escalated.id != in_senior.id


# --- who may check ---------------------------------------------------------------------


async def test_the_decider_is_never_handed_the_copy_nor_may_record_its_result(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    decision = await sampled_decision(db, "cust-1")

    assert isinstance(await claim_next(db, ALICE, QA_QUEUE), QueueEmpty)
    copy_id = await owner_conn.fetchval("SELECT id FROM review_items WHERE qa_of = $1", decision.id)
    # Even holding a lease somehow (written here as the owner), she is refused.
    token = await owner_conn.fetchval(
        "UPDATE review_items SET lease_owner = 'alice', lease_token = gen_random_uuid(), "
        "lease_expires_at = now() + interval '5 minutes' WHERE id = $1 RETURNING lease_token",
        copy_id,
    )
    before = await snapshot(owner_conn)

    refused = await record_qa_result(
        db, ALICE, QaResultInput(str(copy_id), str(token), True, AGREE)
    )

    assert isinstance(refused, NotPermitted), refused
    await wrote_nothing(owner_conn, before)


async def test_another_reviewer_checks_it_and_no_effect_is_sent_for_the_copy(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    decision = await sampled_decision(db, "cust-1")
    claimed = await claim(db, BOB, QA_QUEUE)
    assert claimed.item.qa_of == decision.id
    assert claimed.evidence_hash == decision.evidence_hash

    result = await record_qa_result(db, BOB, answer(claimed, False, WRONG_OUTCOME, "too fast"))

    assert isinstance(result, QaResult), result
    assert (result.decision_id, result.agrees, result.reason_code, result.reviewer) == (
        decision.id,
        False,
        WRONG_OUTCOME,
        "bob",
    )
    copy = await owner_conn.fetchrow("SELECT * FROM review_items WHERE id = $1", claimed.item.id)
    assert copy["state"] == "decided"
    assert copy["lease_token"] is None
    # The original decision's application, and no other.
    applications = await owner_conn.fetch("SELECT decision_id FROM decision_applications")
    assert [row["decision_id"] for row in applications] == [decision.id]
    checks = await qa.checks_by_decision_ids(db, [decision.id])
    assert checks[decision.id].result == result
    # The disagreement is for an approver: the decision can be overturned as ever.
    overturned = await overturn_decision(
        db, APPROVER, OverturnInput(str(decision.id), "name_mismatch", "QA disagreed")
    )
    assert isinstance(overturned, Decision)
    assert overturned.supersedes == decision.id


async def test_submit_decision_refuses_a_qa_copy_with_a_typed_error(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    claimed = await copy_claimed_by_bob(db)
    await define_reason_code(
        db, ADMIN, queue=QA_QUEUE, code="ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    before = await snapshot(owner_conn)

    refused = await submit_decision(db, BOB, verdict_for(claimed, reason_code="ok"))

    assert isinstance(refused, InvalidInput), refused
    assert refused.field == "itemId"
    assert "recordQaResult" in refused.message
    assert await snapshot(owner_conn) == before


# --- the fences of recordQaResult --------------------------------------------------------


@pytest.mark.parametrize(
    ("agrees", "code", "note", "expected"),
    [
        (True, WRONG_OUTCOME, None, InvalidReasonCode),  # a disagreeing code, agreeing
        (False, AGREE, None, InvalidReasonCode),  # an agreeing code, disagreeing
        (True, "documents_ok", None, InvalidReasonCode),  # kyc's code, not the QA queue's
        (False, UNCLEAR, None, InvalidInput),  # requires a note
        (False, UNCLEAR, "   ", InvalidInput),  # a note that says nothing
    ],
)
async def test_a_bad_reason_or_missing_note_writes_nothing(
    db: Database,
    qa_queue: str,
    owner_conn: asyncpg.Connection,
    agrees: bool,
    code: str,
    note: str | None,
    expected: type,
) -> None:
    claimed = await copy_claimed_by_bob(db)
    before = await snapshot(owner_conn)

    refused = await record_qa_result(db, BOB, answer(claimed, agrees, code, note))

    assert isinstance(refused, expected), refused
    if isinstance(refused, InvalidInput):
        assert refused.field == "note"
    await wrote_nothing(owner_conn, before)


async def test_a_stale_lease_writes_nothing(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    claimed = await copy_claimed_by_bob(db)
    await expire_lease(owner_conn, claimed.item.id)
    before = await snapshot(owner_conn)

    expired = await record_qa_result(db, BOB, answer(claimed))
    not_his = await record_qa_result(db, CAROL, answer(claimed))

    assert isinstance(expired, StaleLease), expired
    assert isinstance(not_his, StaleLease), not_his
    await wrote_nothing(owner_conn, before)


async def test_a_repeated_check_under_its_lease_is_answered_and_writes_nothing(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    claimed = await copy_claimed_by_bob(db)
    recorded = await record_qa_result(db, BOB, answer(claimed, note="fine"))
    assert isinstance(recorded, QaResult), recorded
    before = await snapshot(owner_conn)

    # The same check again (a console whose answer was lost): answered with the result.
    again = await record_qa_result(db, BOB, answer(claimed, note="fine"))
    # Another answer under the spent lease: stale, and it says the lease was used.
    other = await record_qa_result(db, BOB, answer(claimed, False, WRONG_OUTCOME))
    # Someone else presenting the token learns nothing of the result.
    not_his = await record_qa_result(db, CAROL, answer(claimed, note="fine"))

    assert isinstance(again, qa.QaReplayed), again
    assert again.result == recorded
    assert isinstance(other, StaleLease), other
    assert "recorded under this lease already" in other.message
    assert isinstance(not_his, StaleLease), not_his
    assert "recorded" not in not_his.message
    assert await snapshot(owner_conn) == before
    assert len(await qa_results(owner_conn)) == 1


async def test_two_qa_reviewers_racing_for_one_copy_record_one_result(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    decision = await sampled_decision(db, "cust-1")

    async def take_and_check(who: Principal) -> object:
        claimed = await claim_next(db, who, QA_QUEUE)
        if not isinstance(claimed, Claim):
            return claimed
        # The holder sends its answer twice at once, as a double click would.
        both = await asyncio.gather(
            record_qa_result(db, who, answer(claimed)),
            record_qa_result(db, who, answer(claimed, False, WRONG_OUTCOME)),
        )
        return both

    outcomes = await asyncio.gather(take_and_check(BOB), take_and_check(CAROL))

    assert sorted(type(o).__name__ for o in outcomes) == ["QueueEmpty", "list"]
    answers = next(o for o in outcomes if isinstance(o, list))
    assert sorted(type(a).__name__ for a in answers) == ["QaResult", "StaleLease"]
    rows = await qa_results(owner_conn)
    assert [row["decision_id"] for row in rows] == [decision.id]


# --- timeline and hints ------------------------------------------------------------------


async def test_the_item_timeline_shows_the_sampling_and_the_check(
    db: Database, qa_queue: str
) -> None:
    decision = await sampled_decision(db, "cust-1")
    claimed = await claim(db, BOB, QA_QUEUE)
    result = await record_qa_result(db, BOB, answer(claimed, False, UNCLEAR, "why reject?"))
    assert isinstance(result, QaResult)

    key = PageKey(decision.item_id, None, 50)
    events = (await events_pages(db, [key]))[key]

    kinds = [e.kind for e in events]
    assert kinds[-3:] == [TimelineKind.DECIDED, TimelineKind.QA_SAMPLED, TimelineKind.QA_CHECKED]
    sampled_event, checked_event = events[-2:]
    assert (sampled_event.decision_id, sampled_event.to_queue) == (decision.id, QA_QUEUE)
    assert (sampled_event.actor, sampled_event.actor_role) == ("casework", "system")
    assert (checked_event.decision_id, checked_event.actor) == (decision.id, "bob")
    assert checked_event.body == "why reject?"


async def test_the_decision_hint_names_the_qa_queue_only_when_sampled(
    db: Database, test_database: TestDatabase, kyc_queue: str
) -> None:
    await configure(db, 1.0)
    await enqueue_one(db, "kyc", "sampled")
    await enqueue_one(db, "kyc", "not-sampled")
    async with listening(test_database) as listener:
        first = await claim(db, ALICE)
        sampled_hints = await listener.events_of(decide(db, ALICE, first))
        await configure(db, 0)
        second = await claim(db, ALICE)
        plain_hints = await listener.events_of(decide(db, ALICE, second))

    (sampled_event,) = [parse_event(p) for p in sampled_hints]
    (plain_event,) = [parse_event(p) for p in plain_hints]
    assert sampled_event is not None
    assert plain_event is not None
    assert sampled_event.other_queues == (QA_QUEUE,)
    assert QA_QUEUE in sampled_event.queues
    assert plain_event.other_queues == ()


# --- measures ----------------------------------------------------------------------------


async def test_quality_measures_of_a_scripted_set_of_results(
    db: Database, qa_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """Alice approves 3 and Bob rejects 2, all sampled (rate 1); Carol agrees with Alice's
    first and Bob's first and disagrees with Alice's second, which an approver overturns;
    then, with sampling off, Alice approves one more and Bob escalates one."""
    alice = [await sampled_decision(db, f"a{n}") for n in range(3)]
    bob = []
    for n in range(2):
        await enqueue_one(db, "kyc", f"b{n}")
        bob.append(await decide(db, BOB, await claim(db, BOB), Verdict.REJECT, "name_mismatch"))
    # Carol takes all five copies, and answers three of them.
    copies = [await claim(db, CAROL, QA_QUEUE) for _ in range(5)]
    by_decision = {c.item.qa_of: c for c in copies}
    assert set(by_decision) == {d.id for d in alice + bob}
    for decision, agrees in ((alice[0], True), (bob[0], True), (alice[1], False)):
        code = AGREE if agrees else WRONG_OUTCOME
        result = await record_qa_result(db, CAROL, answer(by_decision[decision.id], agrees, code))
        assert isinstance(result, QaResult), result
        assert result.decision_id == decision.id
    overturned = await overturn_decision(
        db, APPROVER, OverturnInput(str(alice[1].id), "name_mismatch")
    )
    assert isinstance(overturned, Decision)
    await configure(db, 0)
    await sampled_decision(db, "a-unsampled")
    await enqueue_one(db, "kyc", "b-escalated")
    await decide(db, BOB, await claim(db, BOB), Verdict.ESCALATE, "needs_senior")

    whole_key = MeasureKey("kyc", DEFAULT_WINDOW_SECONDS, None)
    own_key = MeasureKey("kyc", DEFAULT_WINDOW_SECONDS, "alice")
    found = await quality(db, [whole_key, own_key])

    counts = QualityCounts
    whole = found[whole_key]
    assert whole.whole == counts(None, decided=6, sampled=5, checked=3, agreed=2, overturned=1)
    assert whole.whole.agreement_rate == pytest.approx(2 / 3)
    assert whole.whole.overturn_rate == pytest.approx(1 / 6)
    assert whole.whole.sampled_share == pytest.approx(5 / 6)
    assert whole.by_reason_code == [
        counts("documents_ok", decided=4, sampled=3, checked=2, agreed=1, overturned=1),
        counts("name_mismatch", decided=2, sampled=2, checked=1, agreed=1, overturned=0),
    ]
    assert whole.by_reviewer == [
        counts("alice", decided=4, sampled=3, checked=2, agreed=1, overturned=1),
        counts("bob", decided=2, sampled=2, checked=1, agreed=1, overturned=0),
    ]
    assert [row.agreement_rate for row in whole.by_reviewer] == [0.5, 1.0]
    # Alice's own token: her decisions only, her row only.
    own = found[own_key]
    assert own.whole == counts(None, decided=4, sampled=3, checked=2, agreed=1, overturned=1)
    assert [row.key for row in own.by_reviewer] == ["alice"]
    assert [row.key for row in own.by_reason_code] == ["documents_ok"]


async def test_quality_of_a_queue_without_decisions_is_zero_with_null_rates(
    db: Database, qa_queue: str
) -> None:
    key = MeasureKey("kyc", DEFAULT_WINDOW_SECONDS, None)

    found = (await quality(db, [key]))[key]

    assert found.whole == QualityCounts(None, 0, 0, 0, 0, 0)
    assert (found.whole.agreement_rate, found.whole.overturn_rate) == (None, None)
    assert (found.by_reason_code, found.by_reviewer) == ([], [])
