"""rotateEffectSecret: a queue's webhook secret, rotated with an overlap."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.review import webhook_secrets
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotPermitted, from_failure
from server.graphql.review.queues import Queue


@strawberry.type
class EffectSecretRotated:
    queue: Queue
    generated_secret: str | None = strawberry.field(
        description="The new secret when Casework generated it (no secret given): shown "
        "this once, never again. Null when you gave it."
    )
    overlap_ends_at: datetime | None = strawberry.field(
        description="Until when the rotated-out secret signs beside the new one; null: it "
        "stopped at once (overlapHours 0)."
    )

    @classmethod
    def of(cls, rotated: webhook_secrets.EffectSecretRotated) -> EffectSecretRotated:
        return cls(
            queue=Queue.from_domain(rotated.queue),
            generated_secret=rotated.generated_secret,
            overlap_ends_at=rotated.overlap_ends_at,
        )


RotateEffectSecretResult = Annotated[
    EffectSecretRotated | NotPermitted | InvalidInput,
    strawberry.union("RotateEffectSecretResult"),
]


@strawberry.type
class EffectSecretMutation:
    @strawberry.mutation(
        description="Replaces the signing secret of a queue's webhook effect; the old one "
        "keeps signing beside it (two signatures in webhook-signature) for overlapHours "
        "(0 to 720), then only the new one signs. secret: a `whsec_` secret; null: Casework "
        "generates one and shows it once. Admins only."
    )
    async def rotate_effect_secret(
        self,
        info: Info[Context, None],
        queue: str,
        secret: str | None = None,
        overlap_hours: int = webhook_secrets.DEFAULT_OVERLAP_HOURS,
    ) -> RotateEffectSecretResult:
        ctx = info.context
        result = await webhook_secrets.rotate_effect_secret(
            ctx.db, ctx.principal, queue, secret, overlap_hours
        )
        return from_failure(result) if is_failure(result) else EffectSecretRotated.of(result)
