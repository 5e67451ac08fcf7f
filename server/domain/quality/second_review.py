"""Second review (migration 0020): four eyes before the effect. A provisional decision of a
configured verdict waits in the second-review queue until another reviewer confirms it
(it becomes effective) or overrides it (a decision of their own supersedes it)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from server.domain.failures import (
    EvidenceChanged,
    InvalidInput,
    InvalidReasonCode,
    NotPermitted,
    StaleLease,
)
from server.domain.model import SECOND_REVIEW_VERDICTS, Decision, Principal, Role, Verdict
from server.domain.parsing import holds_lease, parse_id, parse_lease_token
from server.domain.review.decisions import (
    EVIDENCE_HASH,
    DecisionInput,
    Replayed,
    answer_retry,
    check_note,
    decision_by_id,
    note_required,
)
from server.observability import tracing
from server.store import constraints, sql
from server.store.database import Database, Row
from server.store.errors import IntegrityViolation


@dataclass(frozen=True)
class ConfirmInput:
    item_id: str
    lease_token: str
    evidence_hash: str


@dataclass(frozen=True)
class OverrideInput:
    item_id: str
    lease_token: str
    verdict: Verdict
    reason_code: str
    evidence_hash: str
    note: str | None = None


ConfirmResult = Decision | Replayed | StaleLease | EvidenceChanged | NotPermitted | InvalidInput
OverrideResult = (
    Decision
    | Replayed
    | StaleLease
    | EvidenceChanged
    | InvalidReasonCode
    | NotPermitted
    | InvalidInput
)


def _parse_second_review(
    principal: Principal, item_id: str, lease_token: str, evidence_hash: str
) -> tuple[int, UUID] | NotPermitted | InvalidInput:
    if principal.role is not Role.REVIEWER:
        return NotPermitted("only a reviewer token may make a second review")
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    token = parse_lease_token(lease_token)
    if isinstance(token, InvalidInput):
        return token
    if not EVIDENCE_HASH.fullmatch(evidence_hash):
        return InvalidInput(
            "evidenceHash is the 64-hex-digit hash the claim returned", "evidenceHash"
        )
    return parsed, token


async def confirm_decision(
    db: Database, principal: Principal, confirmation: ConfirmInput
) -> ConfirmResult:
    """The second reviewer agrees: the provisional decision the item waits on becomes
    effective and goes to the apply worker. Fenced by the caller's lease and pinned to the
    evidence the decision was made on; the decision's maker is refused."""
    parsed = _parse_second_review(
        principal, confirmation.item_id, confirmation.lease_token, confirmation.evidence_hash
    )
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    row = await db.fetchrow(
        sql.decisions.DECISION_CONFIRM,
        item_id=item_id,
        lease_token=token,
        actor=principal.user,
        actor_role=principal.role.value,
        evidence_hash=confirmation.evidence_hash,
        queue_scope=sorted(principal.queues),
        traceparent=tracing.current_traceparent(),
    )
    if row is not None:
        return Decision.from_row(row)
    state = await _second_review_state(db, item_id, token, None, None, None)
    if _confirmed_by_caller(principal, state):
        # A confirmation of the caller's under this lease already: retried after a lost
        # answer, it is answered with it; with other evidence, the lease was used.
        assert state is not None
        if state["confirmed_on"] == confirmation.evidence_hash:
            return Replayed(await decision_by_id(db, state["confirmed_here"]))
        return _used_lease(item_id, state["confirmed_here"])
    if state is not None and state["decided_here"] is not None:
        answer = await _used_by_override(db, principal, state["decided_here"])
        if answer is not None:
            return answer
    refusal = _second_review_refusal(principal, item_id, token, state, confirmation.evidence_hash)
    if refusal is not None:
        return refusal
    assert state is not None
    if state["decided_on"] != confirmation.evidence_hash:
        return EvidenceChanged(
            item_id,
            state["evidence_hash"],
            "the evidence changed after the first decision was made on it, so that decision "
            "cannot be confirmed: override it on the evidence as it is now; nothing was "
            "written",
        )
    # Every condition holds now, so it failed an instant ago: a concurrent write won.
    return StaleLease(item_id, queue=state["queue"])


async def override_decision(
    db: Database, principal: Principal, override: OverrideInput
) -> OverrideResult:
    """The second reviewer disagrees: a decision of their own, with its own reason from the
    catalogue of the provisional decision's queue, supersedes it and takes effect; the
    provisional one is never carried out. Fenced by the caller's lease and the evidence the
    caller saw; the decision's maker is refused."""
    parsed = _parse_second_review(
        principal, override.item_id, override.lease_token, override.evidence_hash
    )
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    if override.verdict not in SECOND_REVIEW_VERDICTS:
        return InvalidInput(
            "an override is a decision on the subject, APPROVE or REJECT: to pass the item "
            "on, release it (an escalation is not a second review's outcome)",
            "verdict",
        )
    problem = check_note(override.note)
    if problem:
        return problem
    try:
        row = await db.fetchrow(
            sql.decisions.DECISION_OVERRIDE,
            item_id=item_id,
            lease_token=token,
            actor=principal.user,
            actor_role=principal.role.value,
            verdict=override.verdict.value,
            reason_code=override.reason_code,
            evidence_hash=override.evidence_hash,
            note=override.note,
            queue_scope=sorted(principal.queues),
            traceparent=tracing.current_traceparent(),
        )
    except IntegrityViolation as violation:
        # Lost the race for the row to another write under this lease, or to another row
        # superseding the decision: the diagnosis finds which.
        if violation.constraint not in (
            constraints.REVIEW_DECISIONS_ONE_PER_LEASE,
            constraints.REVIEW_DECISIONS_ONE_OVERTURN_EACH,
        ):
            raise
        row = None
    if row is not None:
        return Decision.from_row(row)
    state = await _second_review_state(
        db, item_id, token, override.verdict.value, override.reason_code, override.note
    )
    if state is not None and state["decided_here"] is not None:
        retried = DecisionInput(
            override.item_id,
            override.lease_token,
            override.verdict,
            override.reason_code,
            override.evidence_hash,
            override.note,
        )
        answer = await answer_retry(db, principal, state["decided_here"], retried)
        if answer is not None:
            return answer
    if _confirmed_by_caller(principal, state):
        assert state is not None
        return _used_lease(item_id, state["confirmed_here"])
    refusal = _second_review_refusal(principal, item_id, token, state, override.evidence_hash)
    if refusal is not None:
        return refusal
    assert state is not None
    if not state["reason_allowed"]:
        return InvalidReasonCode(state["decided_in"], override.reason_code, override.verdict.name)
    if state["note_missing"]:
        return note_required(override.reason_code)
    return StaleLease(item_id, queue=state["queue"])


async def _second_review_state(
    db: Database,
    item_id: int,
    token: UUID,
    verdict: str | None,
    reason_code: str | None,
    note: str | None,
) -> Row | None:
    return await db.fetchrow(
        sql.decisions.SECOND_REVIEW_DIAGNOSE,
        item_id=item_id,
        lease_token=token,
        verdict=verdict,
        reason_code=reason_code,
        note=note,
    )


def _second_review_refusal(
    principal: Principal, item_id: int, token: UUID, state: Row | None, evidence_hash: str
) -> StaleLease | EvidenceChanged | NotPermitted | InvalidInput | None:
    """The refusals confirmation and override share, in order of precedence; None when the
    item, the caller, the lease and the item's evidence are all as they must be."""
    if state is None or not principal.works_in(state["queue"]):
        # Outside the token's queues reads as missing: no team learns another's item ids.
        return InvalidInput(f"no item with id {item_id}", "itemId")
    if state["kind"] == "exception":
        return InvalidInput(
            f"item {item_id} stands for an exception: act on it with the exception mutations",
            "itemId",
        )
    if state["awaiting_decision_id"] is not None and state["first_decider"] == principal.user:
        # Four-eyes: whatever lease the caller holds, the decision is theirs.
        return NotPermitted(
            f"decision {state['awaiting_decision_id']} is yours: its second review is made by "
            "another reviewer; nothing was written"
        )
    if not holds_lease(state, token, principal.user):
        return StaleLease(item_id, queue=state["queue"])
    if state["awaiting_decision_id"] is None:
        return InvalidInput(
            f"item {item_id} waits for no second review: decide it with submitDecision",
            "itemId",
        )
    if state["evidence_hash"] != evidence_hash:
        return EvidenceChanged(item_id, state["evidence_hash"])
    return None


def _confirmed_by_caller(principal: Principal, state: Row | None) -> bool:
    """A confirmation was recorded under this lease by the caller, whose token covers the
    queue it was made in. A lease token is its holder's secret: anyone else presenting it
    is told what any stale lease is told."""
    return (
        state is not None
        and state["confirmed_here"] is not None
        and state["confirmed_by"] == principal.user
        and principal.works_in(state["queue"])
    )


def _used_lease(item_id: int, decision_id: int) -> StaleLease:
    return StaleLease(
        item_id,
        f"decision {decision_id} was confirmed under this lease already; nothing was written",
        decided_under_this_lease=True,
        decision_id=decision_id,
    )


async def _used_by_override(
    db: Database, principal: Principal, override_id: int
) -> StaleLease | None:
    """A confirmation under a lease that recorded an override: stale, and said so to the
    override's maker only."""
    prior = await decision_by_id(db, override_id)
    if prior.reviewer != principal.user or not principal.works_in(prior.lease_queue):
        return None
    return StaleLease(
        prior.item_id,
        f"decision {prior.id} was recorded under this lease already, overriding the one "
        "under review; nothing was written",
        decided_under_this_lease=True,
        decision_id=prior.id,
    )
