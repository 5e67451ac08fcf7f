"""The object types of the schema, each built from a domain record."""

from __future__ import annotations

import base64
import enum
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain import apply, audit, leases, model, qa, queues, reads
from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.loaders import AuditKey, DecisionPageKey, LagKey, PageKey
from server.graphql.measures.queues import QueueMeasures, queue_measures
from server.graphql.selection import selected_names

if TYPE_CHECKING:
    from server.graphql.exceptions.types import ExceptionNode
    from server.graphql.timeline import ItemEventConnection

# strawberry.enum marks the domain enum itself as the GraphQL enum and returns that class.
# Naming the class, not the call's result, lets mypy read these names as types.
strawberry.enum(model.Verdict, name="Verdict")
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

MAX_PAGE = 200
# The fields of ReviewItem that read its decisions.
ITEM_FIELDS_READING_DECISIONS = frozenset({"decisions", "currentDecision"})

T = TypeVar("T")

RECEIVER_TEXT = (
    "What the receiver answered or the effect reported, cut to 1000 characters. Shown to "
    "admin and integration tokens of the queue; null for other roles."
)


def encode_cursor(kind: str, row_id: int | str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{row_id}".encode()).decode()


def decode_cursor(kind: str, cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        prefix, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix == kind and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ClientError(f"malformed cursor {cursor[:40]!r}")


def decode_text_cursor(kind: str, cursor: str | None) -> str:
    """For rows keyed by text ids that sort in creation order (exceptions)."""
    if cursor is None:
        return ""
    try:
        prefix, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix == kind and value:
            return value
    except (ValueError, UnicodeDecodeError):
        pass
    raise ClientError(f"malformed cursor {cursor[:40]!r}")


def page_size(first: int) -> int:
    if not 1 <= first <= MAX_PAGE:
        raise ClientError(f"first must be between 1 and {MAX_PAGE}")
    return first


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


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


@strawberry.type(description="An item parked until a time (holdItem).")
class Hold:
    until: datetime
    reason: str = strawberry.field(description="A code of the queue's holdReasons.")


@strawberry.type(description="An item reserved for one reviewer (assignItem).")
class Assignment:
    reviewer: str
    until: datetime | None = strawberry.field(description="Null: until unassigned or decided.")


@strawberry.type(description="A hold reason of a queue's catalogue.")
class HoldReason:
    code: str
    label: str

    @classmethod
    def from_domain(cls, reason: model.HoldReason) -> HoldReason:
        return cls(code=reason.code, label=reason.label)


@strawberry.type
class DueByPriority:
    min_priority: int
    due_seconds: int


@strawberry.enum
class ApplicationState(enum.Enum):
    PENDING = "pending"
    APPLIED = "applied"
    FAILED = "failed"


@strawberry.type(description="One attempt at carrying a decision out.")
class ApplyAttempt:
    attempt: int
    worker: str
    started_at: datetime
    finished_at: datetime
    outcome: str = strawberry.field(description="applied, transient or permanent")
    error: str | None = strawberry.field(description=RECEIVER_TEXT)
    next_retry_at: datetime | None


@strawberry.type(description="How far carrying a decision out has got.")
class Application:
    _decision_id: strawberry.Private[int]
    # Whether the caller may read what the receiver answered (apply.may_read_receiver_text).
    _receiver_text_shown: strawberry.Private[bool]
    state: ApplicationState
    attempts: int
    last_error: str | None = strawberry.field(description=RECEIVER_TEXT)
    next_attempt_at: datetime | None
    applied_at: datetime | None
    note: str | None = strawberry.field(description=RECEIVER_TEXT)

    @strawberry.field
    async def history(self, info: Info[Context, None]) -> list[ApplyAttempt]:
        found = await info.context.loaders.attempts.load(self._decision_id)
        shown = self._receiver_text_shown
        return [
            ApplyAttempt(**{**vars(attempt), "error": attempt.error if shown else None})
            for attempt in found
        ]


@strawberry.type(description="A QA reviewer's check of a sampled decision (recordQaResult).")
class QaResult:
    agrees: bool
    reason_code: str = strawberry.field(
        description="A code of the QA queue's catalogue: one allowed for APPROVE when "
        "agreeing, for REJECT when disagreeing."
    )
    note: str | None
    reviewer: str = strawberry.field(description="The QA reviewer, never the decider.")
    recorded_at: datetime

    @classmethod
    def from_domain(cls, result: qa.QaResult) -> QaResult:
        return cls(
            agrees=result.agrees,
            reason_code=result.reason_code,
            note=result.note,
            reviewer=result.reviewer,
            recorded_at=result.recorded_at,
        )


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
    note: str | None
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
            note=decision.note,
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
        description="The item decided; null when it now sits in a queue your token does not "
        "cover (an escalation moved it), as for anything outside your queues."
    )
    async def item(self, info: Info[Context, None]) -> ReviewItem | None:
        item = await info.context.loaders.item.load(self._decision.item_id)
        assert item is not None, "a decision always has its item"
        if not info.context.principal.works_in(item.queue):
            return None
        return ReviewItem.from_domain(item)

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
    payload: JSON
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
            payload=item.payload,
            evidence_hash=item.evidence_hash,
            lease_count=item.lease_count,
            abandon_count=item.abandon_count,
            escalation_count=item.escalation_count,
            created_at=item.created_at,
            decided_at=item.decided_at,
            due_at=item.due_at,
        )

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
    ) -> Annotated[ItemEventConnection, strawberry.lazy("server.graphql.timeline")]:
        from server.graphql.timeline import item_events

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
        viewer = audit.Viewer(info.context.principal)
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


@strawberry.type(
    description="Four-eyes before the effect: decisions with these verdicts (at or above "
    "minPriority, if set) are provisional until a second reviewer in `queue` confirms or "
    "overrides them."
)
class SecondReview:
    verdicts: list[Verdict]
    min_priority: int | None
    queue: str = strawberry.field(description="The second-review queue, worked by reviewers.")


@strawberry.type
class QueueStats:
    pending: int
    leased: int
    oldest_pending_age_seconds: float | None
    unapplied_decisions: int = strawberry.field(
        description="Decided, not yet carried out (retries included)."
    )
    unapplied_older_than_threshold: int = strawberry.field(
        description="The alert: a human decided and the system did not carry it out."
    )
    oldest_unapplied_age_seconds: float | None
    failed_applications: int = strawberry.field(
        description="Decisions whose effect failed for good: a person must look."
    )
    held: int = strawberry.field(
        description="Waiting items parked until a time (not in pending: not claimable)."
    )
    assigned: int = strawberry.field(
        description="Waiting items reserved for a named reviewer, leased or not."
    )
    overdue: int = strawberry.field(
        description="Waiting items past their due time, leased, held or not."
    )


@strawberry.type
class Queue:
    _queue: strawberry.Private[model.Queue]
    name: str
    lease_ttl_seconds: int
    max_abandons: int
    escalation_queue: str | None
    escalation_priority_boost: int
    effect_kind: EffectKind
    effect_target: str | None
    effect_max_attempts: int
    effect_timeout_seconds: float
    holder_role: str = strawberry.field(
        description="Who claims here: reviewer, or approver in a workflow's approval queue."
    )
    reviewer_minutes_per_day: float | None = strawberry.field(
        description="The hands-on minutes the queue's reviewers have a day, together."
    )
    max_leases_per_reviewer: int | None = strawberry.field(
        description="The live leases one reviewer may hold here at once; null: no limit."
    )
    due_seconds: int | None = strawberry.field(
        description="Seconds from enqueue to an item's due time; null: none."
    )
    due_seconds_by_priority: list[DueByPriority] = strawberry.field(
        description="Due times by priority: an item takes the entry with the highest "
        "minPriority at or below its priority, else dueSeconds."
    )
    hold_pauses_due: bool = strawberry.field(
        description="A hold moves the due time on by its length."
    )
    overdue_queue: str | None = strawberry.field(
        description="Where overdue items move at claim time; null: they stay."
    )
    overdue_priority_boost: int
    second_review: SecondReview | None = strawberry.field(
        description="The queue's four-eyes setting; null: decisions take effect alone."
    )
    qa_sample_rate: float = strawberry.field(
        description="The share of approve and reject decisions copied to qaQueue for a QA "
        "check after the effect, chosen by a hash of the decision id; 0: none."
    )
    qa_queue: str | None = strawberry.field(
        description="Where sampled decisions are copied for QA; null: never configured."
    )

    @strawberry.field(description="Backlog and application lag, read now.")
    async def stats(self, info: Info[Context, None], lag_threshold_seconds: int = 60) -> QueueStats:
        if not 1 <= lag_threshold_seconds <= 86400 * 30:
            raise ClientError("lagThresholdSeconds must be between 1 and 2592000")
        loaders = info.context.loaders
        # Both loads join their batches before the first await: the two statements run
        # side by side, not one after the other.
        backlog_load = loaders.backlog.load(self.name)
        lag_load = loaders.application_lag.load(LagKey(self.name, lag_threshold_seconds))
        backlog = await backlog_load
        lag = await lag_load
        # Both answer for every queue asked for, known or not.
        assert backlog is not None
        assert lag is not None
        return QueueStats(
            pending=backlog.pending,
            leased=backlog.leased,
            oldest_pending_age_seconds=backlog.oldest_pending_age_seconds,
            unapplied_decisions=lag.unapplied,
            unapplied_older_than_threshold=lag.unapplied_late,
            oldest_unapplied_age_seconds=lag.oldest_unapplied_age_seconds,
            failed_applications=lag.failed,
            held=backlog.held,
            assigned=backlog.assigned,
            overdue=backlog.overdue,
        )

    @classmethod
    def from_domain(cls, queue: model.Queue) -> Queue:
        return cls(
            _queue=queue,
            name=queue.name,
            lease_ttl_seconds=queue.lease_ttl_seconds,
            max_abandons=queue.max_abandons,
            escalation_queue=queue.escalation_queue,
            escalation_priority_boost=queue.escalation_priority_boost,
            effect_kind=queue.effect_kind,
            effect_target=queues.shown_target(queue.effect_target),
            effect_max_attempts=queue.effect_max_attempts,
            effect_timeout_seconds=queue.effect_timeout_seconds,
            holder_role=queue.holder_role.value,
            reviewer_minutes_per_day=queue.reviewer_minutes_per_day,
            max_leases_per_reviewer=queue.max_leases_per_reviewer,
            due_seconds=queue.due_seconds,
            due_seconds_by_priority=[
                DueByPriority(min_priority=rule.min_priority, due_seconds=rule.due_seconds)
                for rule in queue.due_seconds_by_priority
            ],
            hold_pauses_due=queue.hold_pauses_due,
            overdue_queue=queue.overdue_queue,
            overdue_priority_boost=queue.overdue_priority_boost,
            second_review=None
            if queue.second_review is None
            else SecondReview(
                verdicts=list(queue.second_review.verdicts),
                min_priority=queue.second_review.min_priority,
                queue=queue.second_review.queue,
            ),
            qa_sample_rate=queue.qa_sample_rate,
            qa_queue=queue.qa_queue,
        )

    @strawberry.field(
        description="Figures over the last sinceSeconds (default 7 days): arrivals, "
        "decisions and their reasons, lease counts, hands-on and elapsed time, the lease TTL "
        "advice, reviewers and capacity. Managers and admins; a reviewer's or approver's "
        "token sees its own work."
    )
    async def measures(
        self, info: Info[Context, None], since_seconds: int = DEFAULT_WINDOW_SECONDS
    ) -> QueueMeasures:
        return await queue_measures(info, self._queue, since_seconds)

    @strawberry.field
    async def reason_codes(self, info: Info[Context, None]) -> list[ReasonCode]:
        found = await info.context.loaders.reason_codes.load(self.name)
        return [ReasonCode.from_domain(r) for r in found]

    @strawberry.field(description="The reasons an item may be held for here (holdItem).")
    async def hold_reasons(self, info: Info[Context, None]) -> list[HoldReason]:
        found = await info.context.loaders.hold_reasons.load(self.name)
        return [HoldReason.from_domain(r) for r in found]

    @strawberry.field(description="The queue's items, oldest first.")
    async def items(
        self,
        info: Info[Context, None],
        state: ItemState | None = None,
        first: int = 50,
        after: str | None = None,
    ) -> ItemConnection:
        size = page_size(first)
        loaders = info.context.loaders
        rows = await loaders.items_page.load(
            PageKey(
                self.name,
                state,
                decode_cursor("item", after),
                size + 1,
                with_decisions=bool(
                    selected_names(info, "edges", "node") & ITEM_FIELDS_READING_DECISIONS
                ),
            )
        )
        edges = [
            ItemEdge(
                cursor=encode_cursor("item", row.item.id),
                node=ReviewItem.from_domain(row.item, row.decisions),
            )
            for row in rows[:size]
        ]
        return ItemConnection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=len(rows) > size, end_cursor=edges[-1].cursor if edges else None
            ),
        )

    @strawberry.field(description="Decisions made in this queue, oldest first.")
    async def decisions(
        self, info: Info[Context, None], first: int = 50, after: str | None = None
    ) -> DecisionConnection:
        size = page_size(first)
        rows = await info.context.loaders.decisions_page.load(
            DecisionPageKey(self.name, decode_cursor("decision", after), size + 1)
        )
        edges = [
            DecisionEdge(cursor=encode_cursor("decision", d.id), node=Decision.from_domain(d))
            for d in rows[:size]
        ]
        return DecisionConnection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=len(rows) > size, end_cursor=edges[-1].cursor if edges else None
            ),
        )


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


@strawberry.type
class Me:
    user: str
    role: str
    queues: list[str]

    @strawberry.field(
        description="Your live leases, soonest to run out first, with their tokens: a "
        "reloaded console takes its work up again from here."
    )
    async def leases(self, info: Info[Context, None]) -> list[HeldLease]:
        found = await leases.held_leases(info.context.db, info.context.principal)
        return [HeldLease.from_domain(claim) for claim in found]
