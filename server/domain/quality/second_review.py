"""Second review (migration 0020): four eyes before the effect. A provisional decision of a
configured verdict waits in the second-review queue until another reviewer confirms it
(it becomes effective) or overrides it (a decision of their own supersedes it)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from server.domain.failures import (
    EvidenceChanged,
    InvalidInput,
    NotPermitted,
    ReauthenticationRequired,
    StaleLease,
)
from server.domain.model import SECOND_REVIEW_VERDICTS, Decision, Principal
from server.domain.parsing import holds_lease
from server.domain.privacy import notes
from server.domain.privacy.keys import Keyring
from server.domain.review.decisions import (
    DecisionInput,
    Replayed,
    SubmitResult,
    answer_retry,
    callers_decision,
    catalogue_refusal,
    check_note,
    decision_by_id,
    item_refusal,
    parse_reviewer_write,
    under_lease,
    used_lease,
    verdict_values,
)
from server.domain.step_up import step_up, step_up_refusal
from server.store import constraints, sql
from server.store.database import Database, Row
from server.store.errors import IntegrityViolation


@dataclass(frozen=True)
class ConfirmInput:
    item_id: str
    lease_token: str
    evidence_hash: str


# What an override gives is what a decision does.
OverrideInput = DecisionInput


ConfirmResult = (
    Decision
    | Replayed
    | StaleLease
    | EvidenceChanged
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput
)
# An override answers as a decision's submission does.
OverrideResult = SubmitResult

_REFUSED = "only a reviewer token may make a second review"


async def confirm_decision(
    db: Database, principal: Principal, confirmation: ConfirmInput
) -> ConfirmResult:
    """The second reviewer agrees: the provisional decision the item waits on becomes
    effective and goes to the apply worker. Fenced by the caller's lease and pinned to the
    evidence the decision was made on; the decision's maker is refused."""
    parsed = parse_reviewer_write(principal, confirmation, refused=_REFUSED)
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    row = await db.fetchrow(
        sql.decisions.DECISION_CONFIRM,
        **under_lease(principal, item_id, token),
        **step_up(principal),
        evidence_hash=confirmation.evidence_hash,
    )
    if row is not None:
        return Decision.from_row(row)
    state = await _second_review_state(db, principal, item_id, token, None, None, None)
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
    db: Database, principal: Principal, override: OverrideInput, keyring: Keyring | None = None
) -> OverrideResult:
    """The second reviewer disagrees: a decision of their own, with its own reason from the
    catalogue of the provisional decision's queue, supersedes it and takes effect; the
    provisional one is never carried out. Fenced by the caller's lease and the evidence the
    caller saw; the decision's maker is refused. Its note is sealed as a decision's is on an
    item under a privacy policy (notes.seal_decision_note)."""
    parsed = parse_reviewer_write(principal, override, refused=_REFUSED)
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    if override.verdict not in SECOND_REVIEW_VERDICTS:
        return InvalidInput(
            "an override is a decision on the subject, APPROVE or REJECT: to pass the item "
            "on, release it (an escalation is not a second review's outcome)",
            "verdict",
        )
    if problem := check_note(override.note):
        return problem
    stored = await notes.seal_decision_note(
        db, keyring, item_id, override.note, principal.queue_scope()
    )
    if isinstance(stored, InvalidInput):
        return stored
    try:
        row = await db.fetchrow(
            sql.decisions.DECISION_OVERRIDE,
            **under_lease(principal, item_id, token),
            **step_up(principal),
            **{**verdict_values(override), "note": stored},
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
        db, principal, item_id, token, override.verdict.value, override.reason_code, override.note
    )
    if state is not None and state["decided_here"] is not None:
        answer = await answer_retry(db, principal, state["decided_here"], override, keyring)
        if answer is not None:
            return answer
    if _confirmed_by_caller(principal, state):
        assert state is not None
        return _used_lease(item_id, state["confirmed_here"])
    refusal = _second_review_refusal(principal, item_id, token, state, override.evidence_hash)
    if refusal is not None:
        return refusal
    assert state is not None
    if refused := catalogue_refusal(
        state, state["decided_in"], override.reason_code, override.verdict.name
    ):
        return refused
    return StaleLease(item_id, queue=state["queue"])


async def _second_review_state(
    db: Database,
    principal: Principal,
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
        **step_up(principal),
    )


def _second_review_refusal(
    principal: Principal, item_id: int, token: UUID, state: Row | None, evidence_hash: str
) -> StaleLease | EvidenceChanged | ReauthenticationRequired | NotPermitted | InvalidInput | None:
    """The refusals confirmation and override share, in order of precedence; None when the
    item, the caller, the lease and the item's evidence are all as they must be."""
    if unseen := item_refusal(principal, item_id, state):
        return unseen
    assert state is not None
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
    if stale_login := step_up_refusal(principal, state):
        return stale_login
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
    return used_lease(item_id, decision_id, "confirmed under this lease already")


async def _used_by_override(
    db: Database, principal: Principal, override_id: int
) -> StaleLease | None:
    """A confirmation under a lease that recorded an override: stale, and said so to the
    override's maker only."""
    prior = await callers_decision(db, principal, override_id)
    if prior is None:
        return None
    return used_lease(
        prior.item_id,
        prior.id,
        "recorded under this lease already, overriding the one under review",
    )
