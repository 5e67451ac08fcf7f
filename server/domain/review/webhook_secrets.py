"""Rotating a webhook's signing secret with an overlap, as Standard Webhooks allows.

The new secret becomes the current one; the one it replaces keeps signing beside it (both
signatures in `webhook-signature`, space-separated) until the overlap ends, so a receiver
verifies whether it holds the old secret or has already moved to the new one. Afterwards
only the new one signs. A queue's effect is rotated here; a workflow's redrive webhook in
server/domain/exceptions/workflows.py, with the same checks (`checked_rotation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Queue
from server.domain.review.queues import admin_refusal
from server.signatures import new_secret, secret_refusal
from server.store import sql
from server.store.database import Database

DEFAULT_OVERLAP_HOURS = 24
# A month: long enough for a receiver's slowest release train.
MAX_OVERLAP_HOURS = 720


@dataclass(frozen=True)
class Rotation:
    """The secret to store, and whether Casework made it (then it is shown once)."""

    secret: str
    generated: bool
    overlap_seconds: float


def checked_rotation(secret: str | None, overlap_hours: int) -> Rotation | InvalidInput:
    if not 0 <= overlap_hours <= MAX_OVERLAP_HOURS:
        return InvalidInput(
            f"overlapHours must be between 0 and {MAX_OVERLAP_HOURS} (0: the old secret "
            "stops signing at once)",
            "overlapHours",
        )
    if secret is None:
        return Rotation(new_secret(), True, overlap_hours * 3600.0)
    if problem := secret_refusal(secret):
        return InvalidInput(problem, "secret")
    return Rotation(secret, False, overlap_hours * 3600.0)


@dataclass(frozen=True)
class EffectSecretRotated:
    queue: Queue
    # The new secret when Casework generated it (shown this once); None when it was given.
    generated_secret: str | None
    # Until when a rotated-out secret still signs beside the new one; None: none does.
    overlap_ends_at: datetime | None


async def rotate_effect_secret(
    db: Database,
    principal: Principal,
    queue: str,
    secret: str | None,
    overlap_hours: int = DEFAULT_OVERLAP_HOURS,
) -> EffectSecretRotated | NotPermitted | InvalidInput:
    """secret: the new `whsec_` secret; None: Casework generates one."""
    if refusal := admin_refusal(principal, "rotate a queue's effect secret", queue):
        return refusal
    rotation = checked_rotation(secret, overlap_hours)
    if isinstance(rotation, InvalidInput):
        return rotation
    row = await db.fetchrow(
        sql.queues.QUEUE_EFFECT_SECRET_ROTATE,
        queue=queue,
        secret=rotation.secret,
        overlap_seconds=rotation.overlap_seconds,
    )
    if row is None:
        return InvalidInput(
            f"queue {queue[:100]!r} does not exist or its effect is not a webhook", "queue"
        )
    return EffectSecretRotated(
        queue=Queue.from_row(row),
        generated_secret=rotation.secret if rotation.generated else None,
        overlap_ends_at=row["overlap_ends_at"],
    )


async def effect_secret_overlaps(db: Database, queues: list[str]) -> dict[str, datetime]:
    """For each of `queues` whose rotated-out effect secret still signs: until when."""
    rows = await db.fetch(sql.queues.QUEUE_EFFECT_SECRET_OVERLAPS, queues=queues)
    return {row["queue"]: row["overlap_ends_at"] for row in rows}
