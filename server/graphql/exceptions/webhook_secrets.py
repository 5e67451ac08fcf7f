"""rotateRedriveSecret: a workflow's redrive-webhook secret, rotated with an overlap."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.exceptions import workflows
from server.domain.failures import is_failure
from server.domain.review.webhook_secrets import DEFAULT_OVERLAP_HOURS
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotPermitted, from_failure
from server.graphql.exceptions.types import Workflow


@strawberry.type
class RedriveSecretRotated:
    workflow: Workflow
    generated_secret: str | None = strawberry.field(
        description="The new secret when Casework generated it (no secret given): shown "
        "this once, never again. Null when you gave it."
    )
    overlap_ends_at: datetime | None = strawberry.field(
        description="Until when the rotated-out secret signs beside the new one; null: it "
        "stopped at once (overlapHours 0)."
    )

    @classmethod
    def of(cls, rotated: workflows.RedriveSecretRotated) -> RedriveSecretRotated:
        return cls(
            workflow=Workflow.from_domain(rotated.workflow),
            generated_secret=rotated.generated_secret,
            overlap_ends_at=rotated.overlap_ends_at,
        )


RotateRedriveSecretResult = Annotated[
    RedriveSecretRotated | NotPermitted | InvalidInput,
    strawberry.union("RotateRedriveSecretResult"),
]


@strawberry.type
class RedriveSecretMutation:
    @strawberry.mutation(
        description="Replaces the signing secret of a workflow's redrive webhook; the old "
        "one keeps signing beside it (two signatures in webhook-signature) for overlapHours "
        "(0 to 720), then only the new one signs. secret: a `whsec_` secret; null: Casework "
        "generates one and shows it once. Admins whose token covers the workflow's queues."
    )
    async def rotate_redrive_secret(
        self,
        info: Info[Context, None],
        workflow: str,
        secret: str | None = None,
        overlap_hours: int = DEFAULT_OVERLAP_HOURS,
    ) -> RotateRedriveSecretResult:
        ctx = info.context
        result = await workflows.rotate_redrive_secret(
            ctx.db, ctx.principal, workflow, secret, overlap_hours
        )
        return from_failure(result) if is_failure(result) else RedriveSecretRotated.of(result)
