"""Delivering redrives by webhook, once per attempt and recorded: claiming due deliveries,
and recording each attempt. Like applying decisions (apply.py), the POST itself runs
outside any transaction, between a claim and its recording; the redrive key is its
idempotency key. Delivered is not done: the owning system reports the result.

`casework intake` delivers a broker workflow's redrives the same way (server/intake/
redrive.py: its own claim, these recordings)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from server.domain.exceptions import redrives
from server.domain.rows import from_row
from server.domain.text import clipped, storable
from server.store import sql
from server.store.database import Database, Row


class DeliveryAttempt(Protocol):
    """One claimed attempt at delivering a redrive, by webhook or by broker: what its
    recording is fenced by."""

    @property
    def key(self) -> str: ...

    @property
    def attempt(self) -> int: ...


@dataclass(frozen=True)
class DueDelivery:
    key: str
    attempt: int
    exception_id: str
    workflow: str
    source_record_id: str
    version: int
    reason_code: str
    completed_steps: tuple[str, ...]
    blocked_step: str | None
    resume_after: str | None
    stale_steps: tuple[str, ...]
    changes: Any
    correction_evidence: tuple[str, ...]
    corrected_by: str
    requested_by: str
    requested_at: datetime
    target: str
    secret: str
    max_attempts: int
    timeout_seconds: float
    # Rotated-out secrets still in their overlap, newest first: they sign beside `secret`.
    retiring_secrets: tuple[str, ...] = ()
    # Also send Casework-Signature and Idempotency-Key (a target configured before 0032).
    legacy_headers: bool = False

    @classmethod
    def from_row(cls, row: Row) -> DueDelivery:
        return from_row(
            cls,
            row,
            attempt=row["delivery_attempts"],
            completed_steps=tuple(row["completed_steps"]),
            stale_steps=tuple(row["stale_steps"]),
            correction_evidence=tuple(row["correction_evidence"]),
            target=row["redrive_target"],
            secret=row["redrive_secret"],
            max_attempts=row["redrive_max_attempts"],
            timeout_seconds=row["redrive_timeout_seconds"],
            retiring_secrets=tuple(row["redrive_retiring_secrets"]),
            legacy_headers=row["redrive_legacy_headers"],
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret in force, newest first."""
        return (self.secret, *self.retiring_secrets)

    def payload(self) -> dict[str, Any]:
        """What the owning system needs to re-run its work from the right step."""
        return {
            "redriveKey": self.key,
            "exceptionId": self.exception_id,
            "workflow": self.workflow,
            "sourceRecordId": self.source_record_id,
            "version": self.version,
            "reasonCode": self.reason_code,
            "completedSteps": list(self.completed_steps),
            "blockedStep": self.blocked_step,
            "resumeAfter": self.resume_after,
            "staleSteps": list(self.stale_steps),
            "changes": self.changes,
            "evidence": list(self.correction_evidence),
            "correctedBy": self.corrected_by,
            "requestedBy": self.requested_by,
            "requestedAt": self.requested_at.isoformat(),
            "attempt": self.attempt,
        }


async def claim_due(db: Database, limit: int) -> list[DueDelivery]:
    rows = await db.fetch(sql.redrive_delivery.REDRIVE_DELIVERIES_CLAIM, batch_size=limit)
    return [DueDelivery.from_row(row) for row in rows]


async def record_delivered(db: Database, due: DeliveryAttempt) -> bool:
    """False if this attempt no longer counts (a later one took over its lapsed lock)."""
    row = await db.fetchrow(
        sql.redrive_delivery.REDRIVE_DELIVERY_RECORD_DELIVERED,
        redrive_key=due.key,
        attempt=due.attempt,
    )
    return row is not None


async def record_failure(
    db: Database, due: DeliveryAttempt, *, error: str, permanent: bool, retry_at: datetime
) -> str | None:
    """'pending' (will retry), 'failed', or None if this attempt no longer counts. A redrive
    that cannot be delivered goes back to a person in the same transaction."""
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            sql.redrive_delivery.REDRIVE_DELIVERY_RECORD_FAILURE,
            redrive_key=due.key,
            attempt=due.attempt,
            error=storable(error),
            permanent=permanent,
            next_attempt_at=retry_at,
        )
        state = None if row is None else str(row["delivery_state"])
        if state == "failed":
            detail = f"the redrive could not be delivered after {due.attempt} attempt(s): "
            await redrives.answer_as_casework(
                tx, due.key, False, clipped(detail + (storable(error) or ""))
            )
    return state
