"""The object types of the schema, each built from a domain record."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain import model, reads
from server.domain.privacy import notes
from server.domain.quality import audit
from server.domain.review import apply
from server.graphql.context import Context
from server.graphql.controls.types import Assignment, Hold
from server.graphql.identity.types import Authentication, authentication_of
from server.graphql.loaders import AuditKey
from server.graphql.pagination import PageInfo
from server.graphql.privacy import reading as privacy_reading
from server.graphql.privacy.reading import Disclosure, ItemField
from server.graphql.quality.types import QaResult
from server.graphql.review.applications import Application, ApplicationState

if TYPE_CHECKING:
    from server.graphql.exceptions.types import ExceptionNode
    from server.graphql.timeline.types import ItemEventConnection

# strawberry.enum marks the domain enum itself as the GraphQL enum and returns that class.
# Naming the class, not the call's result, lets mypy read these names as types.
strawberry.enum(model.Verdict, name="Verdict")
strawberry.enum(
    notes.NoteState,
    name="NoteState",
    description="How a note sealed under a privacy policy reads for the caller.",
)
NoteState = notes.NoteState
strawberry.enum(model.EffectKind, name="EffectKind")
strawberry.enum(
    model.ItemState, name="ItemState", description="LEASED is a pending item under a live lease."
)
strawberry.enum(
    model.DecisionStatus,
    name="DecisionStatus",
    description="Where a decision stands. PROVISIONAL: it needs a second review and waits "
    "for it (not carried out); EFFECTIVE: it takes effect (it needed no second review, or "
    "was confirmed); SUPERSEDED: an override at second review or an overturn replaced it "
    "(a provisional decision that was overridden was never carried out).",
)
Verdict = model.Verdict
EffectKind = model.EffectKind
ItemState = model.ItemState
DecisionStatus = model.DecisionStatus

# The fields of ReviewItem that read its decisions.
ITEM_FIELDS_READING_DECISIONS = frozenset({"decisions", "currentDecision"})

T = TypeVar("T")


@strawberry.type
class ReasonCode:
    code: str
    label: str
    verdicts: list[Verdict]
    requires_note: bool = strawberry.field(
        description="A decision giving this code must say why in its note."
    )

    @classmethod
    def from_domain(cls, reason: model.ReasonCode) -> ReasonCode:
        return cls(
            code=reason.code,
            label=reason.label,
            verdicts=list(reason.verdicts),
            requires_note=reason.requires_note,
        )


@strawberry.type
class Lease:
    owner: str
    expires_at: datetime


async def decision_note(
    info: Info[Context, None], decision_id: int, item_id: int, note: str | None
) -> notes.NoteReading | None:
    """A decision's sealed note as the caller may read it; None for a note stored as written
    (no statement is made for it)."""
    stored = notes.StoredNote(decision_id, item_id, note)
    if not stored.sealed:
        return None
    ctx = info.context
    return await ctx.loaders.decision_notes(ctx.principal, ctx.keyring).load(stored)


@strawberry.type
class Decision:
    _decision: strawberry.Private[model.Decision]
    id: strawberry.ID
    queue: str
    verdict: Verdict = strawberry.field(
        description="What this row means for the subject; for an overturn, the reversed outcome."
    )
    is_overturn: bool
    reason_code: str
    reviewer: str
    evidence_hash: str
    decided_at: datetime
    status: DecisionStatus = strawberry.field(
        description="PROVISIONAL until its second review, if its queue asks for one; then "
        "EFFECTIVE when confirmed, SUPERSEDED when overridden. Any effective decision is "
        "SUPERSEDED once overturned."
    )
    confirmed_by: str | None = strawberry.field(
        description="The second reviewer who confirmed it; null for a decision that needed "
        "no second review or has not had it."
    )
    confirmed_at: datetime | None = strawberry.field(
        description="When it was confirmed, and so took effect."
    )
    is_override: bool = strawberry.field(
        description="Made at second review in place of the provisional decision it "
        "supersedes (`supersedes`); recorded in that decision's queue."
    )
    review_queue: str | None = strawberry.field(
        description="For an override: the second-review queue it was made in."
    )

    @classmethod
    def from_domain(cls, decision: model.Decision) -> Decision:
        return cls(
            _decision=decision,
            id=strawberry.ID(str(decision.id)),
            queue=decision.queue,
            verdict=decision.outcome,
            is_overturn=decision.is_overturn,
            reason_code=decision.reason_code,
            reviewer=decision.reviewer,
            evidence_hash=decision.evidence_hash,
            decided_at=decision.decided_at,
            status=decision.status,
            confirmed_by=decision.confirmed_by,
            confirmed_at=decision.confirmed_at,
            is_override=decision.is_override,
            review_queue=decision.review_queue,
        )

    @strawberry.field(
        description="Why, in the decider's words. On an item under a privacy policy it is "
        "stored sealed: its text is shown to readers the policy shows personal values to, "
        "and null for others (see noteState)."
    )
    async def note(self, info: Info[Context, None]) -> str | None:
        reading = await decision_note(
            info, self._decision.id, self._decision.item_id, self._decision.note
        )
        return self._decision.note if reading is None else reading.body

    @strawberry.field(
        description="A note on an item under a privacy policy: VISIBLE (note holds its text), "
        "WITHHELD (the policy does not show personal values to the caller's role, or the "
        "subject's data is restricted to compliance), ERASED (erased with the subject's "
        "data). Null when there is no note, or it is not sealed."
    )
    async def note_state(self, info: Info[Context, None]) -> NoteState | None:
        reading = await decision_note(
            info, self._decision.id, self._decision.item_id, self._decision.note
        )
        return None if reading is None else reading.state

    @strawberry.field(
        description="The item decided; null when it now sits in a queue your token does not "
        "cover (an escalation moved it), as for anything outside your queues."
    )
    async def item(self, info: Info[Context, None]) -> ReviewItem | None:
        item = await info.context.loaders.item.load(self._decision.item_id)
        assert item is not None, "a decision always has its item"
        if not info.context.principal.works_in(item.queue):
            return None
        return ReviewItem.from_domain(item)

    @strawberry.field(
        description="How the decider authenticated when deciding (credential kind, issuer, "
        "subject, session, sign-in time and acr, the rules that granted the role); null on "
        "decisions recorded before Casework kept it."
    )
    async def authentication(self, info: Info[Context, None]) -> Authentication | None:
        return await authentication_of(info, self._decision.authentication_id)

    @strawberry.field(description="Carrying it out: state, attempts, last error, applied at.")
    async def application(self, info: Info[Context, None]) -> Application | None:
        found = await info.context.loaders.application.load(self._decision.id)
        if found is None:
            return None
        shown = apply.may_read_receiver_text(info.context.principal, (self._decision.queue,))
        return Application(
            _decision_id=found.decision_id,
            _receiver_text_shown=shown,
            state=ApplicationState(found.state),
            attempts=found.attempts,
            last_error=found.last_error if shown else None,
            next_attempt_at=found.next_attempt_at,
            applied_at=found.applied_at,
            note=found.note if shown else None,
        )

    @strawberry.field
    async def supersedes(self, info: Info[Context, None]) -> Decision | None:
        return await _load_decision(info, self._decision.supersedes)

    @strawberry.field(
        description="Whether the decision was sampled for QA: copied to its queue's QA queue "
        "when it was made (Queue.qaSampleRate)."
    )
    async def sampled_for_qa(self, info: Info[Context, None]) -> bool:
        return await info.context.loaders.qa_check.load(self._decision.id) is not None

    @strawberry.field(
        description="The QA check of this decision; null when it was not sampled or not "
        "checked yet. A disagreement is for an approver to act on (overturnDecision)."
    )
    async def qa_result(self, info: Info[Context, None]) -> QaResult | None:
        check = await info.context.loaders.qa_check.load(self._decision.id)
        if check is None or check.result is None:
            return None
        return QaResult.from_domain(check.result)

    @strawberry.field
    async def superseded_by(self, info: Info[Context, None]) -> Decision | None:
        return await _load_decision(info, self._decision.superseded_by)

    @strawberry.field(
        description="On an item under a privacy policy: the paths its reviewer was shown "
        "when deciding (visible to their role, or revealed). Null on other items."
    )
    async def disclosure(self, info: Info[Context, None]) -> Disclosure | None:
        return await privacy_reading.disclosure_of(info, self._decision.id)


async def _load_decision(info: Info[Context, None], decision_id: int | None) -> Decision | None:
    if decision_id is None:
        return None
    found = await info.context.loaders.decision.load(decision_id)
    return Decision.from_domain(found) if found else None


@strawberry.type
class ReviewItem:
    _item: strawberry.Private[model.Item]
    # The item's decisions when the page it is on loaded them (Queue.items): `decisions`
    # and `currentDecision` then resolve without awaiting (server/graphql/selection.py).
    _decisions: strawberry.Private[list[model.Decision] | None]
    id: strawberry.ID
    queue: str
    external_key: str
    priority: int
    evidence_hash: str
    lease_count: int
    abandon_count: int
    escalation_count: int
    created_at: datetime
    decided_at: datetime | None
    due_at: datetime | None = strawberry.field(
        description="When the item should be decided: its enqueue's dueAt, else its queue's "
        "dueSeconds for its priority; null: no due time."
    )

    @classmethod
    def from_domain(
        cls, item: model.Item, decisions: list[model.Decision] | None = None
    ) -> ReviewItem:
        return cls(
            _item=item,
            _decisions=decisions,
            id=strawberry.ID(str(item.id)),
            queue=item.queue,
            external_key=item.external_key,
            priority=item.priority,
            evidence_hash=item.evidence_hash,
            lease_count=item.lease_count,
            abandon_count=item.abandon_count,
            escalation_count=item.escalation_count,
            created_at=item.created_at,
            decided_at=item.decided_at,
            due_at=item.due_at,
        )

    @strawberry.field(
        description="The item's last change (arrival, claim, lease ended, hold, decision, "
        "move): its activity time, the order of `Query.items`."
    )
    def updated_at(self) -> datetime:
        return self._item.updated_at or self._item.created_at

    # The privacy fields answer from the item, with no await, for items without a policy.
    @strawberry.field(
        description="The item's data. On a queue with a privacy policy, only what you may "
        "see: the values your role is shown at their paths; masked, withheld and erased "
        "values are absent (see `fields`).",
        graphql_type=JSON,
    )
    def payload(self, info: Info[Context, None]) -> Any:
        return privacy_reading.payload_of(info, self._item)

    @strawberry.field(
        description="Under a privacy policy: each field with its class, its state for you, "
        "its digest, and its value when visible. Null on items without a policy.",
        graphql_type=list[ItemField] | None,
    )
    def fields(
        self, info: Info[Context, None]
    ) -> list[ItemField] | Awaitable[list[ItemField] | None] | None:
        return privacy_reading.fields_of(info, self._item)

    @strawberry.field(
        description="Whom the data is about (the integration's subjectRef); null without a "
        "privacy policy.",
        graphql_type=str | None,
    )
    def subject_ref(self, info: Info[Context, None]) -> str | Awaitable[str | None] | None:
        return privacy_reading.subject_ref_of(info, self._item)

    @strawberry.field(
        description="The version of the queue's privacy policy that split the payload; null "
        "without one.",
        graphql_type=int | None,
    )
    def policy_version(self, info: Info[Context, None]) -> int | Awaitable[int | None] | None:
        return privacy_reading.policy_version_of(info, self._item)

    @strawberry.field
    def state(self, info: Info[Context, None]) -> ItemState:
        return self._item.state(info.context.now)

    @strawberry.field(description="Waiting past its dueAt.")
    def overdue(self, info: Info[Context, None]) -> bool:
        return self._item.overdue(info.context.now)

    @strawberry.field(description="The hold in force, if any: not claimable until it ends.")
    def hold(self, info: Info[Context, None]) -> Hold | None:
        item = self._item
        if not item.held(info.context.now):
            return None
        assert item.held_until is not None
        assert item.hold_reason is not None
        return Hold(until=item.held_until, reason=item.hold_reason)

    @strawberry.field(description="The assignment in force, if any: only its reviewer claims.")
    def assignment(self, info: Info[Context, None]) -> Assignment | None:
        reviewer = self._item.assignee(info.context.now)
        if reviewer is None:
            return None
        return Assignment(reviewer=reviewer, until=self._item.assigned_until)

    @strawberry.field(description="The live lease, if any. Its token is never shown here.")
    def lease(self, info: Info[Context, None]) -> Lease | None:
        item = self._item
        if item.state(info.context.now) is not model.ItemState.LEASED:
            return None
        assert item.lease_owner is not None
        assert item.lease_expires_at is not None
        return Lease(owner=item.lease_owner, expires_at=item.lease_expires_at)

    # Each resolver that may find its rows loaded is a plain function that returns either
    # the value or an awaitable of it (graphql-core awaits what is awaitable), so its
    # GraphQL type is given apart from the Python one.
    @strawberry.field(
        description="Every decision on this item, oldest first.", graphql_type=list[Decision]
    )
    def decisions(self, info: Info[Context, None]) -> list[Decision] | Awaitable[list[Decision]]:
        if self._decisions is not None:
            return _decisions_of(self._decisions)
        return self._load_decisions(info, _decisions_of)

    async def _load_decisions(
        self, info: Info[Context, None], shown: Callable[[list[model.Decision]], T]
    ) -> T:
        return shown(await info.context.loaders.item_decisions.load(self._item.id))

    @strawberry.field(
        description="Everything that happened to the item, oldest first: its story end to "
        "end. For an exception's item, what its leases recorded (the exception's own actions "
        "are its `events`)."
    )
    async def events(
        self, info: Info[Context, None], first: int = 50, after: str | None = None
    ) -> Annotated[ItemEventConnection, strawberry.lazy("server.graphql.timeline.types")]:
        from server.graphql.timeline.types import item_events

        return await item_events(info, self._item.id, first, after)

    @strawberry.field(
        description="Everything recorded about the item, as one self-describing document "
        "with a SHA-256 over its canonical form: the item, its payload "
        "history, timeline, decisions with their application records, and any exception "
        "about it. The same document `casework export item` writes; for roles that may not "
        "read what a receiver answered, and tokens limited to some queues, the parts it "
        "leaves out are named in its `withheld` list.",
        graphql_type=JSON,
    )
    async def audit_pack(self, info: Info[Context, None]) -> dict[str, Any]:
        viewer = audit.Viewer(info.context.principal, info.context.keyring)
        found = await info.context.loaders.audit_pack.load(AuditKey(self._item.id, viewer))
        assert found is not None, "a pack is read for an item that was just read"
        return found

    @strawberry.field(
        description="On a QA copy (an item of a QA queue): the decision it checks, with its "
        "verdict, reason, note, reviewer and evidence hash. Null on every other item."
    )
    async def qa_of(self, info: Info[Context, None]) -> Decision | None:
        return await _load_decision(info, self._item.qa_of)

    @strawberry.field(description="The exception this item stands for, if it is one.")
    async def exception(
        self, info: Info[Context, None]
    ) -> Annotated[ExceptionNode, strawberry.lazy("server.graphql.exceptions.types")] | None:
        from server.graphql.exceptions.types import ExceptionNode

        if not self._item.is_exception:
            return None
        exception_id = await info.context.loaders.exception_id_by_item.load(self._item.id)
        if exception_id is None:
            return None
        found = await info.context.loaders.exception.load(exception_id)
        return ExceptionNode.from_domain(found) if found else None

    @strawberry.field(
        description="In a second-review queue: the provisional decision a second reviewer "
        "is asked to confirm or override (its verdict, reason, note, evidence hash and "
        "reviewer, who may not take the item); null otherwise."
    )
    async def awaiting_second_review(self, info: Info[Context, None]) -> Decision | None:
        return await _load_decision(info, self._item.awaiting_decision_id)

    @strawberry.field(
        description="The decision that stands: the latest effective one (not superseded, "
        "and not waiting for its second review).",
        graphql_type=Decision | None,
    )
    def current_decision(
        self, info: Info[Context, None]
    ) -> Decision | Awaitable[Decision | None] | None:
        if self._decisions is not None:
            return _current_decision_of(self._decisions)
        return self._load_decisions(info, _current_decision_of)


def _decisions_of(found: list[model.Decision]) -> list[Decision]:
    return [Decision.from_domain(d) for d in found]


def _current_decision_of(found: list[model.Decision]) -> Decision | None:
    current = reads.effective_decision(found)
    return Decision.from_domain(current) if current else None


@strawberry.type
class ItemEdge:
    cursor: str
    node: ReviewItem


@strawberry.type
class ItemConnection:
    edges: list[ItemEdge]
    page_info: PageInfo


@strawberry.type
class DecisionEdge:
    cursor: str
    node: Decision


@strawberry.type
class DecisionConnection:
    edges: list[DecisionEdge]
    page_info: PageInfo


@strawberry.type(description="A live lease of the caller's own, with its token.")
class HeldLease:
    item: ReviewItem
    lease_token: str
    lease_expires_at: datetime

    @classmethod
    def from_domain(cls, claim: model.Claim) -> HeldLease:
        return cls(
            item=ReviewItem.from_domain(claim.item),
            lease_token=str(claim.lease_token),
            lease_expires_at=claim.lease_expires_at,
        )
