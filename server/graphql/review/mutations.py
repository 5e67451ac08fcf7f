"""Mutations: parse, call the domain, map the result."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

import strawberry
from strawberry.types import Info

from server.domain import failures, model
from server.domain.failures import is_failure
from server.domain.model import Decision as DomainDecision
from server.domain.review import decisions, leases, queues
from server.domain.review import items as enqueueing
from server.graphql.context import Context
from server.graphql.errors import (
    AlreadySuperseded,
    EvidenceChanged,
    InvalidInput,
    InvalidReasonCode,
    LeaseLimitReached,
    NotPermitted,
    QueueEmpty,
    ReauthenticationRequired,
    StaleLease,
    from_failure,
)
from server.graphql.observe import note_decision
from server.graphql.review.enqueueing import EnqueuedItems, NewItemInput
from server.graphql.review.queues import Queue
from server.graphql.review.types import Decision as DecisionType
from server.graphql.review.types import EffectKind, ReasonCode, ReviewItem, Verdict
from server.graphql.review.webhook_secrets import EffectSecretMutation
from server.graphql.same_fields import copied
from server.observability import metrics

# --- payloads -----------------------------------------------------------------------------


@strawberry.type
class Claim:
    item: ReviewItem
    lease_token: str
    lease_expires_at: datetime
    evidence_hash: str

    @classmethod
    def of(cls, claim: model.Claim) -> Claim:
        return cls(
            item=ReviewItem.from_domain(claim.item),
            lease_token=str(claim.lease_token),
            lease_expires_at=claim.lease_expires_at,
            evidence_hash=claim.evidence_hash,
        )


@strawberry.type
class LeaseRenewed:
    item: ReviewItem
    lease_expires_at: datetime

    @classmethod
    def of(cls, item: model.Item) -> LeaseRenewed:
        assert item.lease_expires_at is not None
        return cls(item=ReviewItem.from_domain(item), lease_expires_at=item.lease_expires_at)


@strawberry.type
class ItemAnswer:
    """The answers that carry one item, as the action left it, and nothing else. Only its
    subclasses are in the schema."""

    item: ReviewItem

    @classmethod
    def of(cls, item: model.Item) -> Self:
        return cls(item=ReviewItem.from_domain(item))


@strawberry.type
class LeaseReleased(ItemAnswer):
    pass


@strawberry.type
class DecisionRecorded:
    decision: DecisionType
    replay: bool = strawberry.field(
        description="This submission repeated one recorded already under the same lease "
        "(a retry after a lost answer): the decision is that one, and nothing was written."
    )


@strawberry.type
class QueueConfigured:
    queue: Queue

    @classmethod
    def of(cls, queue: model.Queue) -> QueueConfigured:
        return cls(queue=Queue.from_domain(queue))


@strawberry.type
class ReasonCodeDefined:
    queue: str
    reason_code: ReasonCode

    @classmethod
    def of(cls, reason: model.ReasonCode) -> ReasonCodeDefined:
        return cls(queue=reason.queue, reason_code=ReasonCode.from_domain(reason))


EnqueueItemsResult = Annotated[
    EnqueuedItems | NotPermitted | InvalidInput, strawberry.union("EnqueueItemsResult")
]
ClaimResult = Annotated[
    Claim | QueueEmpty | LeaseLimitReached | NotPermitted | InvalidInput,
    strawberry.union("ClaimResult"),
]
RenewLeaseResult = Annotated[
    LeaseRenewed | StaleLease | NotPermitted | InvalidInput, strawberry.union("RenewLeaseResult")
]
ReleaseLeaseResult = Annotated[
    LeaseReleased | StaleLease | NotPermitted | InvalidInput,
    strawberry.union("ReleaseLeaseResult"),
]
# What a verdict given under a lease, on the evidence shown, with a reason code, answers:
# submitDecision's and a second review's override alike.
DecisionUnderLease = (
    DecisionRecorded
    | StaleLease
    | EvidenceChanged
    | InvalidReasonCode
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput
)
SubmitDecisionResult = Annotated[DecisionUnderLease, strawberry.union("SubmitDecisionResult")]
OverturnDecisionResult = Annotated[
    DecisionRecorded
    | AlreadySuperseded
    | InvalidReasonCode
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput,
    strawberry.union("OverturnDecisionResult"),
]
ConfigureQueueResult = Annotated[
    QueueConfigured | NotPermitted | InvalidInput, strawberry.union("ConfigureQueueResult")
]
DefineReasonCodeResult = Annotated[
    ReasonCodeDefined | NotPermitted | InvalidInput, strawberry.union("DefineReasonCodeResult")
]

# --- inputs -------------------------------------------------------------------------------


@strawberry.input(description="Items of at least minPriority are due dueSeconds after enqueue.")
class DueByPriorityInput:
    min_priority: int
    due_seconds: int

    def to_domain(self) -> model.DueByPriority:
        return model.DueByPriority(self.min_priority, self.due_seconds)


@strawberry.input
class SubmitDecisionInput:
    item_id: strawberry.ID
    lease_token: str
    verdict: Verdict
    reason_code: str
    evidence_hash: str = strawberry.field(description="The hash the claim returned.")
    note: str | None = None

    def to_domain(self) -> decisions.DecisionInput:
        return copied(decisions.DecisionInput, self)


@strawberry.input
class OverturnDecisionInput:
    decision_id: strawberry.ID
    reason_code: str
    note: str | None = None

    def to_domain(self) -> decisions.OverturnInput:
        return decisions.OverturnInput(self.decision_id, self.reason_code, self.note)


@strawberry.input(
    description="Four-eyes before the effect. verdicts: [] turns it off; ESCALATE is refused."
)
class SecondReviewInput:
    verdicts: list[Verdict] = strawberry.field(
        description="The verdicts that need a second review (APPROVE, REJECT)."
    )
    min_priority: int | None = strawberry.field(
        default=None,
        description="Only decisions on items of at least this priority; null: all of them.",
    )
    queue: str | None = strawberry.field(
        default=None,
        description="The second-review queue (worked by reviewers), created if missing; "
        "null: `<name>-second-review`.",
    )

    def to_domain(self) -> queues.SecondReviewSettings:
        return queues.SecondReviewSettings(tuple(self.verdicts), self.min_priority, self.queue)


@strawberry.input(description="How a queue's decisions are carried out.")
class EffectInput:
    kind: EffectKind
    target: str | None = strawberry.field(
        default=None, description="A webhook URL, or a handler name (entry point)."
    )
    secret: str | None = strawberry.field(
        default=None,
        description="Webhooks: the signing secret, `whsec_` + the base64 of 16 to 64 random "
        "bytes (Standard Webhooks).",
    )

    def to_domain(self) -> queues.Effect:
        return queues.Effect(self.kind, self.target, self.secret)


@strawberry.input
class ConfigureQueueInput:
    name: str
    lease_ttl_seconds: int | None = None
    max_abandons: int | None = None
    escalation_queue: str | None = None
    escalation_priority_boost: int | None = None
    effect: EffectInput | None = None
    effect_max_attempts: int | None = None
    effect_timeout_seconds: float | None = None
    effect_legacy_headers: bool | None = strawberry.field(
        default=None,
        description="A webhook effect also sends Casework-Signature and Idempotency-Key, "
        "for a receiver that still verifies the old way; null: unchanged (off for a new "
        "webhook).",
    )
    reviewer_minutes_per_day: float | None = strawberry.field(
        default=None,
        description="The hands-on minutes the queue's reviewers have a day, together: what "
        "Queue.measures.capacity counts as available unless its argument says otherwise.",
    )
    max_leases_per_reviewer: int | None = strawberry.field(
        default=None,
        description="The live leases one reviewer may hold here at once (1 to 1000); 0: no "
        "limit (the default).",
    )
    due_seconds: int | None = strawberry.field(
        default=None, description="Seconds from enqueue to an item's due time; 0: none."
    )
    due_seconds_by_priority: list[DueByPriorityInput] | None = strawberry.field(
        default=None,
        description="Due times by priority (the entry with the highest minPriority at or "
        "below an item's priority wins over dueSeconds); [] clears them.",
    )
    hold_pauses_due: bool | None = strawberry.field(
        default=None, description="Whether a hold moves the due time on by its length."
    )
    overdue_queue: str | None = strawberry.field(
        default=None,
        description='Where overdue items move at claim time, priority raised; "" clears it.',
    )
    overdue_priority_boost: int | None = None
    second_review: SecondReviewInput | None = strawberry.field(
        default=None,
        description="Which decisions need a second person before they take effect; null: "
        "unchanged.",
    )
    qa_sample_rate: float | None = strawberry.field(
        default=None,
        description="The share (0 to 1) of approve and reject decisions copied to the QA "
        "queue for a check after the effect, chosen by a hash of the decision id; 0 turns "
        "it off.",
    )
    qa_queue: str | None = strawberry.field(
        default=None,
        description="Where the sampled decisions go (default `<name>-qa`); created, worked "
        "by reviewers, if it does not exist.",
    )
    require_auth_within_seconds: int | None = strawberry.field(
        default=None,
        description="Step-up: decisions here (submitDecision, confirmDecision, "
        "overrideDecision, overturnDecision) need a sign-in at most this many seconds old "
        "(1 to 86400); older, or unknown (a CLI token), is refused with "
        "ReauthenticationRequired. 0: not required; null: unchanged.",
    )
    require_acr: str | None = strawberry.field(
        default=None,
        description="Step-up: decisions here need this authentication context class (the "
        'acr claim of the sign-in). "": not required; null: unchanged.',
    )

    def to_domain(self) -> queues.QueueSettings:
        return queues.QueueSettings(
            name=self.name,
            lease_ttl_seconds=self.lease_ttl_seconds,
            max_abandons=self.max_abandons,
            escalation_queue=self.escalation_queue,
            escalation_priority_boost=self.escalation_priority_boost,
            effect=None if self.effect is None else self.effect.to_domain(),
            effect_max_attempts=self.effect_max_attempts,
            effect_timeout_seconds=self.effect_timeout_seconds,
            effect_legacy_headers=self.effect_legacy_headers,
            reviewer_minutes_per_day=self.reviewer_minutes_per_day,
            max_leases_per_reviewer=self.max_leases_per_reviewer,
            due_seconds=self.due_seconds,
            due_seconds_by_priority=None
            if self.due_seconds_by_priority is None
            else tuple(rule.to_domain() for rule in self.due_seconds_by_priority),
            hold_pauses_due=self.hold_pauses_due,
            overdue_queue=self.overdue_queue,
            overdue_priority_boost=self.overdue_priority_boost,
            second_review=None if self.second_review is None else self.second_review.to_domain(),
            qa_sample_rate=self.qa_sample_rate,
            qa_queue=self.qa_queue,
            require_auth_within_seconds=self.require_auth_within_seconds,
            require_acr=self.require_acr,
        )


@strawberry.input
class DefineReasonCodeInput:
    queue: str
    code: str
    label: str
    verdicts: list[Verdict]
    requires_note: bool | None = strawberry.field(
        default=None,
        description="A decision or overturn giving this code must say why in its note "
        "(refused with InvalidInput naming `note` otherwise). Left out: unchanged (false for "
        "a new code).",
    )


# --- resolvers ----------------------------------------------------------------------------


def _recorded(decision: DomainDecision) -> None:
    """A decision written by this request: counted, and named in the access line (its id
    joins the line to the worker's lines about carrying it out)."""
    verdict = "overturn" if decision.is_overturn else decision.outcome.value
    metrics.record_decision(
        decision.queue,
        verdict,
        lease_count=decision.lease_count,
        handling_seconds=decision.handling_seconds,
    )
    note_decision(decision.id)


def decision_answer(
    result: DomainDecision | decisions.Replayed, *, wrote_decision: bool = True
) -> DecisionRecorded:
    """The answer for a decision: a replay as it was recorded, anything else written by this
    request (and counted, unless `wrote_decision` is false: a confirmation writes no
    decision of its own, only names the one it made effective in the access line)."""
    if isinstance(result, decisions.Replayed):
        return DecisionRecorded(decision=DecisionType.from_domain(result.decision), replay=True)
    if wrote_decision:
        _recorded(result)
    else:
        note_decision(result.id)
    return DecisionRecorded(decision=DecisionType.from_domain(result), replay=False)


@strawberry.type
class Mutation(EffectSecretMutation):
    @strawberry.mutation(description="Adds items to a queue; all or nothing. Integrations only.")
    async def enqueue_items(
        self, info: Info[Context, None], queue: str, items: list[NewItemInput]
    ) -> EnqueueItemsResult:
        new_items = [item.to_domain() for item in items]
        result = await enqueueing.enqueue_items(
            info.context.db, info.context.principal, queue, new_items, info.context.keyring
        )
        return from_failure(result) if is_failure(result) else EnqueuedItems.of(result)

    @strawberry.mutation(
        description="Leases the next item of a queue to the caller: items assigned to the "
        "caller first, then the rest by priority; held items wait."
    )
    async def claim_next(self, info: Info[Context, None], queue: str) -> ClaimResult:
        result = await leases.claim_next(info.context.db, info.context.principal, queue)
        return from_failure(result) if is_failure(result) else Claim.of(result)

    @strawberry.mutation(description="Extends a live lease to now + the queue's lease TTL.")
    async def renew_lease(
        self, info: Info[Context, None], item_id: strawberry.ID, lease_token: str
    ) -> RenewLeaseResult:
        result = await leases.renew_lease(
            info.context.db, info.context.principal, item_id, lease_token
        )
        return from_failure(result) if is_failure(result) else LeaseRenewed.of(result)

    @strawberry.mutation(description="Gives an item back; it is claimable again at once.")
    async def release_lease(
        self, info: Info[Context, None], item_id: strawberry.ID, lease_token: str
    ) -> ReleaseLeaseResult:
        ctx = info.context
        result = await leases.release_lease(ctx.db, ctx.principal, item_id, lease_token)
        return from_failure(result) if is_failure(result) else LeaseReleased.of(result)

    @strawberry.mutation(description="Records a verdict under a live lease; fenced by its token.")
    async def submit_decision(
        self, info: Info[Context, None], input: SubmitDecisionInput
    ) -> SubmitDecisionResult:
        result = await decisions.submit_decision(
            info.context.db, info.context.principal, input.to_domain(), info.context.keyring
        )
        if is_failure(result):
            if isinstance(result, failures.StaleLease) and result.queue is not None:
                metrics.record_stale_lease(result.queue)
            return from_failure(result)
        return decision_answer(result)

    @strawberry.mutation(
        description="Supersedes the effective decision of an item. Approvers only."
    )
    async def overturn_decision(
        self, info: Info[Context, None], input: OverturnDecisionInput
    ) -> OverturnDecisionResult:
        ctx = info.context
        result = await decisions.overturn_decision(
            ctx.db, ctx.principal, input.to_domain(), ctx.keyring
        )
        return from_failure(result) if is_failure(result) else decision_answer(result)

    @strawberry.mutation(description="Creates a queue or changes the settings given. Admins only.")
    async def configure_queue(
        self, info: Info[Context, None], input: ConfigureQueueInput
    ) -> ConfigureQueueResult:
        result = await queues.configure_queue(
            info.context.db,
            info.context.principal,
            input.to_domain(),
            allowed_hosts=info.context.effect_allowed_hosts,
        )
        return from_failure(result) if is_failure(result) else QueueConfigured.of(result)

    @strawberry.mutation(description="Adds or changes a code in a queue's catalogue. Admins only.")
    async def define_reason_code(
        self, info: Info[Context, None], input: DefineReasonCodeInput
    ) -> DefineReasonCodeResult:
        result = await queues.define_reason_code(
            info.context.db,
            info.context.principal,
            queue=input.queue,
            code=input.code,
            label=input.label,
            verdicts=list(input.verdicts),
            requires_note=input.requires_note,
        )
        return from_failure(result) if is_failure(result) else ReasonCodeDefined.of(result)
