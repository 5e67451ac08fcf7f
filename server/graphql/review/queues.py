"""The Queue type: a queue's settings, catalogues, figures, items and decisions."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.types import Info

from server.domain import model
from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.domain.review import queues, webhook_secrets
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.controls.types import HoldReason
from server.graphql.loaders import DecisionPageKey, LagKey, PageKey
from server.graphql.measures.queues import QueueMeasures, queue_measures
from server.graphql.pagination import PageInfo, decode_cursor, encode_cursor, page_size
from server.graphql.privacy.reveal import FieldAccessResult, field_access
from server.graphql.privacy.types import PrivacyPolicy
from server.graphql.quality.types import SecondReview
from server.graphql.review.types import (
    ITEM_FIELDS_READING_DECISIONS,
    Decision,
    DecisionConnection,
    DecisionEdge,
    EffectKind,
    ItemConnection,
    ItemEdge,
    ItemState,
    ReasonCode,
    ReviewItem,
)
from server.graphql.selection import selected_names


@strawberry.type
class DueByPriority:
    min_priority: int
    due_seconds: int


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
    effect_legacy_headers: bool = strawberry.field(
        description="A webhook effect also sends Casework-Signature and Idempotency-Key "
        "beside the Standard Webhooks headers (on for webhooks configured before them)."
    )
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
    require_auth_within_seconds: int | None = strawberry.field(
        description="Step-up: decisions here need a sign-in at most this many seconds old; "
        "null: not required."
    )
    require_acr: str | None = strawberry.field(
        description="Step-up: decisions here need this authentication context class; null: any."
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
            effect_legacy_headers=queue.effect_legacy_headers,
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
            require_auth_within_seconds=queue.require_auth_within_seconds,
            require_acr=queue.require_acr,
        )

    @strawberry.field(
        description="Until when the webhook effect's rotated-out secret still signs beside "
        "the new one (rotateEffectSecret); null: only the current secret signs."
    )
    async def effect_secret_overlap_ends_at(self, info: Info[Context, None]) -> datetime | None:
        overlaps = await webhook_secrets.effect_secret_overlaps(info.context.db, [self.name])
        return overlaps.get(self.name)

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

    @strawberry.field(
        description="Reveals of its items' fields (revealField) from since (default: seven "
        "days before until) to until (default: now), per reviewer and path: for managers, "
        "admins and compliance officers of the queue."
    )
    async def field_access(
        self,
        info: Info[Context, None],
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> FieldAccessResult:
        return await field_access(info, self._queue, since, until)

    @strawberry.field
    async def reason_codes(self, info: Info[Context, None]) -> list[ReasonCode]:
        found = await info.context.loaders.reason_codes.load(self.name)
        return [ReasonCode.from_domain(r) for r in found]

    @strawberry.field(
        description="The payload policy in force (setPrivacyPolicy); null: none, payloads "
        "are kept as sent."
    )
    async def privacy_policy(self, info: Info[Context, None]) -> PrivacyPolicy | None:
        found = await info.context.loaders.privacy_policy.load(self.name)
        return None if found is None else PrivacyPolicy.from_domain(found)

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
        return ItemConnection(edges=edges, page_info=PageInfo.of(edges, read=rows))

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
        return DecisionConnection(edges=edges, page_info=PageInfo.of(edges, read=rows))
