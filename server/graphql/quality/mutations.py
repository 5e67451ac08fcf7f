"""Second review and QA mutations: confirmDecision, overrideDecision, recordQaResult. Parse,
call the domain, map the result."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.quality import qa, second_review
from server.graphql.context import Context
from server.graphql.errors import (
    EvidenceChanged,
    InvalidInput,
    InvalidReasonCode,
    NotPermitted,
    ReauthenticationRequired,
    StaleLease,
    from_failure,
)
from server.graphql.quality.types import QaResult
from server.graphql.review.mutations import DecisionRecorded, DecisionUnderLease, decision_answer
from server.graphql.review.types import Decision as DecisionType
from server.graphql.review.types import ReviewItem, Verdict
from server.graphql.same_fields import copied


@strawberry.type(description="The QA check is recorded and its copy decided.")
class QaResultRecorded:
    result: QaResult
    decision: DecisionType = strawberry.field(description="The decision checked.")
    item: ReviewItem = strawberry.field(description="The QA copy, now decided.")
    replay: bool = strawberry.field(
        default=False,
        description="This check repeated one recorded already under the same lease (a retry "
        "after a lost answer): the result is that one, and nothing was written.",
    )


ConfirmDecisionResult = Annotated[
    DecisionRecorded
    | StaleLease
    | EvidenceChanged
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput,
    strawberry.union("ConfirmDecisionResult"),
]


OverrideDecisionResult = Annotated[DecisionUnderLease, strawberry.union("OverrideDecisionResult")]


RecordQaResultResult = Annotated[
    QaResultRecorded | StaleLease | InvalidReasonCode | NotPermitted | InvalidInput,
    strawberry.union("RecordQaResultResult"),
]


@strawberry.input
class ConfirmDecisionInput:
    item_id: strawberry.ID
    lease_token: str = strawberry.field(description="The second reviewer's lease.")
    evidence_hash: str = strawberry.field(
        description="The hash the claim returned: it must also be the hash the decision "
        "under review was made on."
    )

    def to_domain(self) -> second_review.ConfirmInput:
        return second_review.ConfirmInput(self.item_id, self.lease_token, self.evidence_hash)


@strawberry.input
class OverrideDecisionInput:
    item_id: strawberry.ID
    lease_token: str = strawberry.field(description="The second reviewer's lease.")
    verdict: Verdict = strawberry.field(description="APPROVE or REJECT.")
    reason_code: str = strawberry.field(
        description="A code of the catalogue of the decision's queue (Decision.queue)."
    )
    evidence_hash: str = strawberry.field(description="The hash the claim returned.")
    note: str | None = None

    def to_domain(self) -> second_review.OverrideInput:
        return copied(second_review.OverrideInput, self)


@strawberry.input(description="A QA reviewer's check of a sampled decision, under a lease.")
class RecordQaResultInput:
    item_id: strawberry.ID = strawberry.field(description="The QA copy (an item of a QA queue).")
    lease_token: str
    agrees: bool = strawberry.field(description="Whether the decision checked was right.")
    reason_code: str = strawberry.field(
        description="A code of the QA queue's catalogue allowed for APPROVE when agreeing, "
        "for REJECT when disagreeing (InvalidReasonCode otherwise)."
    )
    note: str | None = None

    def to_domain(self) -> qa.QaResultInput:
        return qa.QaResultInput(
            self.item_id, self.lease_token, self.agrees, self.reason_code, self.note
        )


@strawberry.type
class QualityMutation:
    @strawberry.mutation(
        description="Second review: makes the provisional decision the item waits on "
        "effective (the apply worker carries it out). Under your lease of the item in the "
        "second-review queue, on the evidence the decision was made on (else "
        "EvidenceChanged); its maker is refused (NotPermitted). Reviewers."
    )
    async def confirm_decision(
        self, info: Info[Context, None], input: ConfirmDecisionInput
    ) -> ConfirmDecisionResult:
        ctx = info.context
        result = await second_review.confirm_decision(ctx.db, ctx.principal, input.to_domain())
        if is_failure(result):
            return from_failure(result)
        return decision_answer(result, wrote_decision=False)

    @strawberry.mutation(
        description="Second review: records your own decision (APPROVE or REJECT, with a "
        "reason of the decision's queue's catalogue) in place of the provisional one, which "
        "is superseded and never carried out; yours takes effect. Under your lease, on the "
        "evidence you were shown; the provisional decision's maker is refused. Reviewers."
    )
    async def override_decision(
        self, info: Info[Context, None], input: OverrideDecisionInput
    ) -> OverrideDecisionResult:
        result = await second_review.override_decision(
            info.context.db, info.context.principal, input.to_domain(), info.context.keyring
        )
        return from_failure(result) if is_failure(result) else decision_answer(result)

    @strawberry.mutation(
        description="Records agree or disagree on a decision sampled for QA, under a lease on "
        "its QA copy. Never by the decision's own reviewer; no effect is sent."
    )
    async def record_qa_result(
        self, info: Info[Context, None], input: RecordQaResultInput
    ) -> RecordQaResultResult:
        ctx = info.context
        result = await qa.record_qa_result(ctx.db, ctx.principal, input.to_domain())
        if is_failure(result):
            return from_failure(result)
        replay = isinstance(result, qa.QaReplayed)
        if isinstance(result, qa.QaReplayed):
            result = result.result
        # Both loads join their batches before the first await.
        decision_load = ctx.loaders.decision.load(result.decision_id)
        item_load = ctx.loaders.item.load(result.qa_item_id)
        decision = await decision_load
        item = await item_load
        assert decision is not None, "decisions are never deleted"
        assert item is not None, "items are never deleted"
        return QaResultRecorded(
            result=QaResult.from_domain(result),
            decision=DecisionType.from_domain(decision),
            item=ReviewItem.from_domain(item),
            replay=replay,
        )
