"""Decisions: fenced by the lease token, pinned to the evidence, append-only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, TypedDict
from uuid import UUID

from server.domain.failures import (
    AlreadySuperseded,
    EvidenceChanged,
    InvalidInput,
    InvalidReasonCode,
    NotPermitted,
    ReauthenticationRequired,
    StaleLease,
)
from server.domain.model import (
    Decision,
    DecisionStatus,
    Principal,
    Role,
    Verdict,
)
from server.domain.parsing import LeaseInput, holds_lease, parse_id, reviewer_lease
from server.domain.privacy import notes
from server.domain.privacy.keys import Keyring
from server.domain.step_up import provenance, step_up, step_up_refusal
from server.domain.text import check_text
from server.observability import tracing
from server.store import constraints, sql
from server.store.database import Database, Row
from server.store.errors import IntegrityViolation

EVIDENCE_HASH = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class DecisionInput:
    item_id: str
    lease_token: str
    verdict: Verdict
    reason_code: str
    evidence_hash: str
    note: str | None = None


@dataclass(frozen=True)
class Replayed:
    """A retried submission that was recorded already: its decision. Nothing was written."""

    decision: Decision


SubmitResult = (
    Decision
    | Replayed
    | StaleLease
    | EvidenceChanged
    | InvalidReasonCode
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput
)


def check_note(note: str | None) -> InvalidInput | None:
    return check_text(note, "note", required=False)


def note_required(reason_code: str) -> InvalidInput:
    """A reason code whose catalogue entry requires a note (defineReasonCode requiresNote),
    given without one that says anything."""
    return InvalidInput(f"reason code {reason_code[:100]!r} requires a note saying why", "note")


class EvidenceInput(LeaseInput, Protocol):
    """A write's input pinned, besides, to the evidence the claim returned."""

    @property
    def evidence_hash(self) -> str: ...


def parse_reviewer_write(
    principal: Principal, write: EvidenceInput, *, refused: str
) -> tuple[int, UUID] | NotPermitted | InvalidInput:
    """A reviewer's write under a lease (`reviewer_lease`), pinned to the evidence the claim
    returned."""
    parsed = reviewer_lease(principal, write, refused=refused)
    if isinstance(parsed, tuple) and not EVIDENCE_HASH.fullmatch(write.evidence_hash):
        return InvalidInput(
            "evidenceHash is the 64-hex-digit hash the claim returned", "evidenceHash"
        )
    return parsed


def noted(
    parsed: tuple[int, UUID] | NotPermitted | InvalidInput, note: str | None
) -> tuple[int, UUID] | NotPermitted | InvalidInput:
    """A parsed write under a lease (`reviewer_lease`, `parse_reviewer_write`) that carries
    a note: refused as well when the note cannot be stored, after what refused its lease."""
    if isinstance(parsed, tuple) and (problem := check_note(note)):
        return problem
    return parsed


class VerdictValues(TypedDict):
    verdict: str
    reason_code: str
    evidence_hash: str
    note: str | None


def verdict_values(decision: DecisionInput) -> VerdictValues:
    """What a decision and an override record beside the lease (`under_lease`)."""
    return {
        "verdict": decision.verdict.value,
        "reason_code": decision.reason_code,
        "evidence_hash": decision.evidence_hash,
        "note": decision.note,
    }


class UnderLease(TypedDict):
    item_id: int
    lease_token: UUID
    actor: str
    actor_role: str
    queue_scope: list[str]
    traceparent: str | None
    authentication_id: int | None


def under_lease(principal: Principal, item_id: int, token: UUID) -> UnderLease:
    """What a reviewer's write under a lease gives its statement beside its own values: the
    fence (the item, the lease token, the token's queues), who writes and how they
    authenticated, the request's trace. A decision adds `step_up(principal)`."""
    return {
        "item_id": item_id,
        "lease_token": token,
        **principal.actor(),
        "queue_scope": sorted(principal.queues),
        "traceparent": tracing.current_traceparent(),
        **provenance(principal),
    }


def item_refusal(principal: Principal, item_id: int, state: Row | None) -> InvalidInput | None:
    """A diagnosed item that is not there for the caller to decide: missing or outside the
    token's queues (the two read alike: no team learns another's item ids), or an
    exception's item."""
    if state is None or not principal.works_in(state["queue"]):
        return InvalidInput(f"no item with id {item_id}", "itemId")
    if state["kind"] == "exception":
        return InvalidInput(
            f"item {item_id} stands for an exception: act on it with the exception mutations",
            "itemId",
        )
    return None


def catalogue_refusal(
    state: Row, queue: str, reason_code: str, verdict: str
) -> InvalidReasonCode | InvalidInput | None:
    """A diagnosis's `reason_allowed` and `note_missing`: the code is not in the queue's
    catalogue for the verdict, or its entry wants a note that says why."""
    if not state["reason_allowed"]:
        return InvalidReasonCode(queue, reason_code, verdict)
    if state["note_missing"]:
        return note_required(reason_code)
    return None


async def submit_decision(
    db: Database, principal: Principal, decision: DecisionInput, keyring: Keyring | None = None
) -> SubmitResult:
    """A verdict under a live lease. A note on an item under a privacy policy is stored
    sealed (notes.seal_decision_note): `keyring` is then required."""
    refused = "only a reviewer token may decide items"
    parsed = noted(parse_reviewer_write(principal, decision, refused=refused), decision.note)
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    values = verdict_values(decision)
    if decision.note:
        # The hot path (no note) pays for none of this.
        stored = await notes.seal_decision_note(
            db, keyring, item_id, decision.note, principal.queue_scope()
        )
        if isinstance(stored, InvalidInput):
            return stored
        values["note"] = stored
    try:
        row = await db.fetchrow(
            sql.decisions.DECISION_SUBMIT,
            **under_lease(principal, item_id, token),
            **step_up(principal),
            **values,
        )
    except IntegrityViolation as violation:
        # One verdict per lease: this one lost the race for the row, and the diagnosis
        # finds the verdict that won.
        if violation.constraint != constraints.REVIEW_DECISIONS_ONE_PER_LEASE:
            raise
        row = None
    if row is not None:
        return Decision.from_row(row)
    return await _why_not_recorded(db, principal, item_id, token, decision, keyring)


async def _why_not_recorded(
    db: Database,
    principal: Principal,
    item_id: int,
    token: UUID,
    decision: DecisionInput,
    keyring: Keyring | None,
) -> SubmitResult:
    """The fence refused the write; say which condition failed, in order of precedence."""
    verdict = decision.verdict.value
    state = await db.fetchrow(
        sql.decisions.DECISION_SUBMIT_DIAGNOSE,
        item_id=item_id,
        reason_code=decision.reason_code,
        verdict=verdict,
        lease_token=token,
        # Only a note that says something is sealed: the plain one says as much.
        note=decision.note,
        **step_up(principal),
    )
    if state is not None and state["prior_decision_id"] is not None:
        # Before the scope check: an escalation moved the item to a queue the token of the
        # reviewer who escalated it need not cover.
        answer = await answer_retry(db, principal, state["prior_decision_id"], decision, keyring)
        if answer is not None:
            return answer
    if unseen := item_refusal(principal, item_id, state):
        return unseen
    assert state is not None
    if state["awaiting_decision_id"] is not None:
        return _awaits_second_review(item_id, state["awaiting_decision_id"])
    if state["kind"] == "qa":
        return InvalidInput(
            f"item {item_id} is a QA copy of a decision: record the check with recordQaResult "
            "(submitDecision decides review items only); nothing was written",
            "itemId",
        )
    if not holds_lease(state, token, principal.user):
        return StaleLease(item_id, queue=state["queue"])
    if stale_login := step_up_refusal(principal, state):
        return stale_login
    if state["evidence_hash"] != decision.evidence_hash:
        return EvidenceChanged(item_id, state["evidence_hash"])
    if refusal := catalogue_refusal(
        state, state["queue"], decision.reason_code, decision.verdict.name
    ):
        return refusal
    # Every condition holds now, so it failed an instant ago: a concurrent write won.
    return StaleLease(item_id, queue=state["queue"])


def _awaits_second_review(item_id: int, decision_id: int) -> InvalidInput:
    return InvalidInput(
        f"item {item_id} waits for the second review of decision {decision_id}: confirm it "
        "(confirmDecision) or override it (overrideDecision)",
        "itemId",
    )


async def answer_retry(
    db: Database,
    principal: Principal,
    prior_id: int,
    decision: DecisionInput,
    keyring: Keyring | None = None,
) -> Replayed | StaleLease | None:
    """A verdict was recorded under this lease already: is this submission a retry of it?

    Only the reviewer who recorded it, with a token that still covers its queue, is told:
    the same verdict, reason code, evidence hash and note again is answered with that
    decision; anything else is stale, and says that this lease was used. A lease token is
    its holder's secret, so anyone else presenting it gets the answer of any lease that is
    not theirs (None: the diagnosis goes on), and learns nothing of the decision.
    """
    prior = await callers_decision(db, principal, prior_id)
    if prior is None:
        return None
    if (
        prior.outcome is decision.verdict
        and prior.reason_code == decision.reason_code
        and prior.evidence_hash == decision.evidence_hash
        # A sealed note is compared as it was written.
        and await notes.open_decision_note(db, keyring, prior.item_id, prior.note) == decision.note
    ):
        return Replayed(prior)
    return used_lease(
        prior.item_id,
        prior.id,
        "recorded under this lease already, with another verdict, reason code, evidence "
        "hash or note",
        queue=prior.queue,
    )


async def callers_decision(db: Database, principal: Principal, decision_id: int) -> Decision | None:
    """A decision recorded under the lease the caller presents, if the caller made it and
    its token still covers the queue the lease was held in. A lease token is its holder's
    secret: to anyone else (None) it is any lease that is not theirs."""
    prior = await decision_by_id(db, decision_id)
    if prior.reviewer != principal.user or not principal.works_in(prior.lease_queue):
        return None
    return prior


def used_lease(item_id: int, decision_id: int, how: str, queue: str | None = None) -> StaleLease:
    """Stale, and told to the maker of the decision the lease was used for: `how` it was."""
    return StaleLease(
        item_id,
        f"decision {decision_id} was {how}; nothing was written",
        decided_under_this_lease=True,
        decision_id=decision_id,
        queue=queue,
    )


@dataclass(frozen=True)
class OverturnInput:
    decision_id: str
    reason_code: str
    note: str | None = None


OverturnResult = (
    Decision
    | AlreadySuperseded
    | InvalidReasonCode
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput
)


async def overturn_decision(
    db: Database, principal: Principal, overturn: OverturnInput, keyring: Keyring | None = None
) -> OverturnResult:
    """An approver's reversal of an effective decision. A note on an item under a privacy
    policy is stored sealed (notes.seal_decision_note): `keyring` is then required."""
    if principal.role is not Role.APPROVER:
        return NotPermitted("only an approver may overturn a decision")
    decision_id = parse_id(overturn.decision_id, "decisionId")
    if isinstance(decision_id, InvalidInput):
        return decision_id
    if problem := check_note(overturn.note):
        return problem
    rows = await db.fetch(sql.decisions_read.DECISIONS_GET_BY_IDS, ids=[decision_id])
    if not rows or not principal.works_in(rows[0]["queue"]):
        return InvalidInput(f"no decision with id {decision_id}", "decisionId")
    target = Decision.from_row(rows[0])
    if target.superseded_by is not None or target.outcome is Verdict.ESCALATE:
        return AlreadySuperseded(decision_id, target.superseded_by)
    if target.status is DecisionStatus.PROVISIONAL:
        return _not_effective_yet(decision_id)
    note = await notes.seal_decision_note(db, keyring, target.item_id, overturn.note)
    if isinstance(note, InvalidInput):
        return note
    try:
        row = await db.fetchrow(
            sql.decisions.DECISION_OVERTURN,
            decision_id=decision_id,
            **principal.actor(),
            reason_code=overturn.reason_code,
            note=note,
            traceparent=tracing.current_traceparent(),
            **provenance(principal),
            **step_up(principal),
        )
    except IntegrityViolation as violation:
        if violation.constraint == constraints.REVIEW_DECISIONS_ONE_OVERTURN_EACH:
            return AlreadySuperseded(decision_id, None)
        raise
    if row is not None:
        return Decision.from_row(row)
    reversed_outcome = Verdict.REJECT if target.outcome is Verdict.APPROVE else Verdict.APPROVE
    state = await db.fetchrow(
        sql.decisions.DECISION_OVERTURN_DIAGNOSE,
        decision_id=decision_id,
        reason_code=overturn.reason_code,
        note=overturn.note,
        **step_up(principal),
    )
    assert state is not None, "decisions are never deleted"
    # Not superseded a moment ago; if it is now, a concurrent overturn won.
    if state["superseded_by"] is not None:
        return AlreadySuperseded(decision_id, state["superseded_by"])
    if stale_login := step_up_refusal(principal, state):
        return stale_login
    if state["awaits_review"]:
        # Not confirmed when the overturn read it.
        return _not_effective_yet(decision_id)
    if refusal := catalogue_refusal(
        state, target.queue, overturn.reason_code, reversed_outcome.name
    ):
        return refusal
    # Every condition holds now, so it failed an instant ago: the catalogue changed.
    return InvalidReasonCode(target.queue, overturn.reason_code, reversed_outcome.name)


def _not_effective_yet(decision_id: int) -> InvalidInput:
    return InvalidInput(
        f"decision {decision_id} waits for its second review: only an effective decision may "
        "be overturned (the second reviewer confirms or overrides it)",
        "decisionId",
    )


async def decision_by_id(db: Database, decision_id: int) -> Decision:
    rows = await db.fetch(sql.decisions_read.DECISIONS_GET_BY_IDS, ids=[decision_id])
    return Decision.from_row(rows[0])
