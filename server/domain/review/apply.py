"""Carrying decisions out, once: claiming due applications and recording each attempt.

The effect itself (a webhook, a handler) runs outside any transaction, between a claim and
its recording; the decision id is its idempotency key. A worker killed in between leaves a
claim that another worker takes over once the dead one's liveness lapses (or, at the latest,
its lock), and the decision is attempted again; the proof is recorded once either way.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from server.domain.exceptions import actions, redrives
from server.domain.exceptions.records import SYSTEM_ACTOR, SYSTEM_ROLE, Consequence
from server.domain.model import EffectKind, Principal, Role, Verdict
from server.domain.rows import FromRow, from_row, grouped, seconds
from server.domain.text import clipped, storable
from server.store import sql
from server.store.database import Database, Row

BACKOFF_MAX_SECONDS = 300.0


@dataclass(frozen=True)
class DueApplication:
    decision_id: int
    attempt: int
    item_id: int
    external_key: str
    queue: str
    outcome: Verdict
    is_overturn: bool
    # For an overturn: the outcome it reverses, so the effect can undo it.
    superseded_decision_id: int | None
    superseded_outcome: Verdict | None
    reason_code: str
    note: str | None
    reviewer: str
    evidence_hash: str
    decided_at: datetime
    effect_kind: EffectKind
    effect_target: str | None
    effect_secret: str | None
    effect_timeout_seconds: float
    effect_max_attempts: int
    # Rotated-out secrets still in their overlap, newest first: they sign beside the
    # current one (migration 0032).
    effect_retiring_secrets: tuple[str, ...] = ()
    # Also send Casework-Signature and Idempotency-Key (a target configured before 0032).
    effect_legacy_headers: bool = False
    # Set when an apply_decision exception's redrive put the decision back on the list.
    redrive_key: str | None = None
    # The trace of the request that recorded the decision, when tracing was on.
    traceparent: str | None = None

    @classmethod
    def from_row(cls, row: Row) -> DueApplication:
        superseded = row["superseded_outcome"]
        return from_row(
            cls,
            row,
            optional=("traceparent",),
            attempt=row["attempts"],
            outcome=Verdict(row["outcome"]),
            is_overturn=row["verdict"] == "overturn",
            superseded_decision_id=row["supersedes"],
            superseded_outcome=Verdict(superseded) if superseded else None,
            effect_kind=EffectKind(row["effect_kind"]),
            effect_retiring_secrets=tuple(row["effect_retiring_secrets"]),
        )

    @property
    def effect_secrets(self) -> tuple[str, ...]:
        """Every secret in force, newest first."""
        current = () if self.effect_secret is None else (self.effect_secret,)
        return current + self.effect_retiring_secrets

    def payload(self) -> dict[str, Any]:
        """What the owning system receives: enough to carry the outcome out, or to reverse
        the one an overturn supersedes."""
        return {
            "decisionId": str(self.decision_id),
            "itemId": str(self.item_id),
            "externalKey": self.external_key,
            "queue": self.queue,
            "verdict": self.outcome.name,
            "isOverturn": self.is_overturn,
            "supersedes": None
            if self.superseded_decision_id is None
            else {
                "decisionId": str(self.superseded_decision_id),
                "verdict": self.superseded_outcome.name if self.superseded_outcome else None,
            },
            "reasonCode": self.reason_code,
            "note": self.note,
            "reviewer": self.reviewer,
            "evidenceHash": self.evidence_hash,
            "decidedAt": self.decided_at.isoformat(),
            "attempt": self.attempt,
            # Set when a person had the cause fixed and asked for the decision to be re-applied.
            "redriveKey": self.redrive_key,
        }


@dataclass(frozen=True)
class Liveness:
    """Who claims: one run of one worker (`worker_id`, new after a lapse), its name, and how
    long its liveness lasts once renewed. Its claims are taken over once that has passed."""

    worker_id: UUID
    worker: str
    lease_seconds: float


async def claim_due(db: Database, limit: int, liveness: Liveness) -> list[DueApplication]:
    """Claims (and renews the claimer's liveness in the same statement)."""
    rows = await db.fetch(
        sql.applications.APPLICATIONS_CLAIM, batch_size=limit, **_liveness(liveness)
    )
    return [DueApplication.from_row(row) for row in rows]


def _liveness(liveness: Liveness) -> dict[str, Any]:
    return {
        "worker_id": liveness.worker_id,
        "worker": liveness.worker,
        "lease_seconds": liveness.lease_seconds,
    }


async def renew_liveness(db: Database, liveness: Liveness) -> None:
    await db.fetch(sql.applications.APPLY_WORKER_RENEW, **_liveness(liveness))


async def leave(db: Database, worker_id: UUID) -> None:
    """The worker stopped: what it abandoned may be taken over at once."""
    await db.fetch(sql.applications.APPLY_WORKER_LEAVE, worker_id=worker_id)


def may_read_receiver_text(principal: Principal, queues: tuple[str, ...]) -> bool:
    """Whether the principal sees what a receiver answered, for work in these queues.

    A receiver's answer is the owning system's text: it can carry its internal errors, its
    hosts and the data it echoes. Admins (who configure the target) and integrations (who
    run the receiver) need it to fix a failure and may see it for their queues. Reviewers,
    approvers and managers need to know that carrying out failed, how often and when (state,
    attempts, outcome, times), not what the receiver said; a person who owns a failure
    through an exception sees its detail there."""
    return principal.role in (Role.ADMIN, Role.INTEGRATION) and any(map(principal.works_in, queues))


async def record_applied(
    db: Database, due: DueApplication, *, note: str | None, worker: str, started_at: datetime
) -> bool:
    """True if this call applied it; False if it had been applied already (no change).
    A redriven decision's exception closes as corrected in the same transaction."""
    arguments = {
        "decision_id": due.decision_id,
        "note": storable(note),
        "attempt": due.attempt,
        "worker": worker,
        "started_at": started_at,
    }
    if due.redrive_key is None:
        # The common case: one statement, no transaction to open and close.
        row = await db.fetchrow(sql.applications.APPLICATION_RECORD_APPLIED, **arguments)
    else:
        async with db.transaction() as tx:
            row = await tx.fetchrow(sql.applications.APPLICATION_RECORD_APPLIED, **arguments)
            await redrives.answer_as_casework(tx, due.redrive_key, True, storable(note))
    assert row is not None
    return bool(row["applied"])


@dataclass(frozen=True)
class AppliedAttempt:
    """One attempt that ended in success, waiting to be recorded with others."""

    due: DueApplication
    note: str | None
    started_at: datetime


async def record_applied_batch(
    db: Database, attempts: list[AppliedAttempt], *, worker: str
) -> dict[int, bool]:
    """record_applied for several decisions in one statement (none of them a redrive, each
    decision once): for each decision id, True if this call applied it, False if it had been
    applied already."""
    rows = await db.fetch(
        sql.applications.APPLICATIONS_RECORD_APPLIED,
        decision_ids=[a.due.decision_id for a in attempts],
        notes=[storable(a.note) for a in attempts],
        attempts=[a.due.attempt for a in attempts],
        started_ats=[a.started_at for a in attempts],
        worker=worker,
    )
    return {row["decision_id"]: bool(row["applied"]) for row in rows}


def next_attempt_at(
    attempt: int, *, base_seconds: float, retry_after: float | None, now: datetime
) -> datetime:
    """Exponential backoff with jitter; a server's Retry-After is a floor, not a ceiling."""
    delay = min(BACKOFF_MAX_SECONDS, base_seconds * 2 ** (attempt - 1))
    delay *= random.uniform(0.5, 1.5)
    if retry_after is not None:
        delay = max(delay, min(retry_after, BACKOFF_MAX_SECONDS))
    return now + timedelta(seconds=delay)


async def record_failure(
    db: Database,
    due: DueApplication,
    *,
    error: str,
    permanent: bool,
    retry_at: datetime,
    worker: str,
    started_at: datetime,
) -> str | None:
    """The application's state afterwards: 'pending' (will retry) or 'failed'; None if it
    was no longer pending (applied meanwhile by a worker that took over a lapsed lock).

    A decision that failed for good is handed to a person in the same transaction: an
    exception in workflow apply_decision, or, for a redrive, its failure reported."""
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            sql.applications.APPLICATION_RECORD_FAILURE,
            decision_id=due.decision_id,
            attempt=due.attempt,
            worker=worker,
            started_at=started_at,
            error=storable(error),
            permanent=permanent,
            next_attempt_at=retry_at,
        )
        state = None if row is None or row["state"] is None else str(row["state"])
        if state == "failed":
            await _hand_to_person(tx, due, storable(error) or "", permanent=permanent)
    return state


APPLY_WORKFLOW = "apply_decision"


async def _hand_to_person(
    db: Database, due: DueApplication, error: str, *, permanent: bool
) -> None:
    if due.redrive_key is not None:
        await redrives.answer_as_casework(db, due.redrive_key, False, clipped(error))
        return
    attempts = due.attempt
    await actions.raise_checked(
        db,
        actions.RaiseInput(
            workflow=APPLY_WORKFLOW,
            source_record_id=str(due.decision_id),
            reason_code="effect_refused" if permanent else "attempts_exhausted",
            detail=clipped(
                f"The {due.effect_kind.value} effect of decision {due.decision_id} "
                f"(queue {due.queue}, {due.outcome.name}) failed after {attempts} "
                f"attempt(s): {error}"
            ),
            consequence=Consequence.HIGH,
            completed_steps=["decide"],
            blocked_step="apply",
            evidence=[f"casework:decision/{due.decision_id}", f"casework:item/{due.item_id}"],
            context={
                "queue": due.queue,
                "externalKey": due.external_key,
                "verdict": due.outcome.name,
                "attempts": attempts,
            },
        ),
        actor=SYSTEM_ACTOR,
        actor_role=SYSTEM_ROLE,
        decision_id=due.decision_id,
    )


@dataclass(frozen=True)
class Application:
    decision_id: int
    state: str
    attempts: int
    last_error: str | None
    next_attempt_at: datetime | None
    applied_at: datetime | None
    note: str | None


async def applications_by_decision_ids(
    db: Database, decision_ids: list[int]
) -> dict[int, Application]:
    rows = await db.fetch(
        sql.applications.APPLICATIONS_GET_BY_DECISION_IDS, decision_ids=decision_ids
    )
    return {
        row["decision_id"]: from_row(
            Application,
            row,
            next_attempt_at=row["next_attempt_at"] if row["state"] == "pending" else None,
            note=row["applied_note"],
        )
        for row in rows
    }


@dataclass(frozen=True)
class Attempt(FromRow):
    attempt: int
    worker: str
    started_at: datetime
    finished_at: datetime
    outcome: str
    error: str | None
    next_retry_at: datetime | None


async def attempts_by_decision_ids(
    db: Database, decision_ids: list[int]
) -> dict[int, list[Attempt]]:
    attempts = await db.fetch(
        sql.applications.APPLICATION_ATTEMPTS_GET_BY_DECISION_IDS, decision_ids=decision_ids
    )
    return grouped(decision_ids, "decision_id", attempts, Attempt.from_row)


@dataclass(frozen=True)
class ApplicationLag:
    unapplied: int
    unapplied_late: int
    oldest_unapplied_age_seconds: float | None
    failed: int


async def application_lags(
    db: Database, queues: list[str], threshold_seconds: float
) -> dict[str, ApplicationLag]:
    """One row per queue asked for, known or not."""
    rows = await db.fetch(
        sql.applications.APPLICATIONS_GET_QUEUE_LAG,
        queues=queues,
        threshold_seconds=threshold_seconds,
    )
    return {
        row["queue"]: from_row(
            ApplicationLag,
            row,
            oldest_unapplied_age_seconds=seconds(row["oldest_unapplied_age_seconds"]),
        )
        for row in rows
    }


def utcnow() -> datetime:
    return datetime.now(UTC)
