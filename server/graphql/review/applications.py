"""How far carrying a decision out has got: Decision.application and its attempts."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry
from strawberry.types import Info

from server.graphql.context import Context

RECEIVER_TEXT = (
    "What the receiver answered or the effect reported, cut to 1000 characters. Shown to "
    "admin and integration tokens of the queue; null for other roles."
)


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
