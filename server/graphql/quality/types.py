"""The object types of second review and QA: a queue's second-review setting, a QA result."""

from __future__ import annotations

from datetime import datetime

import strawberry

from server.domain.model import Verdict
from server.domain.quality import qa
from server.graphql.same_fields import copied


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
        return copied(cls, result)


@strawberry.type(
    description="Four-eyes before the effect: decisions with these verdicts (at or above "
    "minPriority, if set) are provisional until a second reviewer in `queue` confirms or "
    "overrides them."
)
class SecondReview:
    verdicts: list[Verdict]
    min_priority: int | None
    queue: str = strawberry.field(description="The second-review queue, worked by reviewers.")
