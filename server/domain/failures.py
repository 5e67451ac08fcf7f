"""Expected failures. Domain functions return these; they are never raised."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

from typing_extensions import TypeIs

from server.domain.model import Claim


@dataclass(frozen=True)
class NotPermitted:
    message: str


@dataclass(frozen=True)
class InvalidInput:
    message: str
    field: str | None = None


@dataclass(frozen=True)
class NotFound:
    """Nothing with this id, or nothing the caller's token covers: the two answer alike, so
    that no team learns another's ids."""

    what: str
    id: str

    @property
    def message(self) -> str:
        return f"no {self.what} with id {self.id[:40]}"


@dataclass(frozen=True)
class QueueEmpty:
    queue: str

    @property
    def message(self) -> str:
        return f"queue {self.queue!r} has no item to claim"


@dataclass(frozen=True)
class StaleLease:
    item_id: int
    message: str = (
        "this lease is no longer valid (expired, released, or the item was decided); "
        "nothing was written"
    )
    # Set only for the reviewer whose verdict was recorded under this lease, when this
    # submission differs from it. Anyone else presenting the token learns nothing of it.
    decided_under_this_lease: bool = False
    decision_id: int | None = None
    # The item's queue, when the refusal found it (submitDecision): a metrics label, never
    # shown to the caller, and no part of what the refusal says.
    queue: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class EvidenceChanged:
    item_id: int
    current_evidence_hash: str
    message: str = "the item's evidence changed after it was claimed; nothing was written"


@dataclass(frozen=True)
class InvalidReasonCode:
    queue: str
    code: str
    verdict: str

    @property
    def message(self) -> str:
        return (
            f"reason code {self.code!r} is not in the catalogue of queue {self.queue!r} "
            f"for verdict {self.verdict}"
        )


@dataclass(frozen=True)
class AlreadySuperseded:
    decision_id: int
    superseded_by: int | None
    message: str = (
        "only the effective decision of an item may be overturned; this one has been "
        "superseded, or is an escalation"
    )


@dataclass(frozen=True)
class InvalidTransition:
    """An exception action its state, or its reason, does not allow."""

    exception_id: str
    state: str
    action: str
    allowed_actions: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class AlreadyQueued:
    exception_id: str
    redrive_key: str
    message: str = "a redrive of this correction version was requested already; nothing new"


@dataclass(frozen=True)
class LeaseLimitReached:
    """The caller holds as many live leases in the queue as its limit allows. `held` are
    those leases, tokens included (they are the caller's own), so that a console that lost
    a claim's answer, or a reloaded tab, takes its work up again."""

    queue: str
    limit: int
    held: tuple[Claim, ...]

    @property
    def message(self) -> str:
        return (
            f"you hold {len(self.held)} live leases in queue {self.queue!r}, its limit per "
            "reviewer: decide or release one of them (listed in `held`) first; nothing was "
            "claimed"
        )


@dataclass(frozen=True)
class InvalidHoldReason:
    queue: str
    code: str

    @property
    def message(self) -> str:
        return (
            f"hold reason {self.code[:100]!r} is not in the catalogue of queue {self.queue!r}; "
            "nothing was written"
        )


@dataclass(frozen=True)
class NotLeased:
    """A revocation found no live lease to end."""

    item_id: int
    message: str = "nobody holds a live lease on this item; nothing was written"


@dataclass(frozen=True)
class NotHeld:
    item_id: int
    message: str = (
        "this item is not held (its hold ended, or it never had one); nothing was written"
    )


@dataclass(frozen=True)
class NotAssigned:
    item_id: int
    message: str = "this item is not assigned to anyone now; nothing was written"


@dataclass(frozen=True)
class ItemNotWaiting:
    """The item is decided, or an exception's item that nobody can act on now (parked)."""

    item_id: int
    state: str

    @property
    def message(self) -> str:
        return f"item {self.item_id} is {self.state}, not waiting for review; nothing was written"


@dataclass(frozen=True)
class ReauthenticationRequired:
    """The queue (or workflow) asks for a login at most `required_within_seconds` old (and,
    when `acr` is set, of that authentication context class); the caller's is older, of
    another class, or unknown (a CLI token proves no login time). Nothing was written; a
    lease held is untouched: sign in again and retry with it."""

    required_within_seconds: int | None
    acr: str | None
    authenticated_at: datetime | None

    @property
    def message(self) -> str:
        wants = []
        if self.required_within_seconds is not None:
            wants.append(f"a sign-in within the last {self.required_within_seconds} seconds")
        if self.acr is not None:
            wants.append(f"authentication context {self.acr[:100]!r}")
        return f"this needs {' and '.join(wants)}: sign in again; nothing was written"


Failure = (
    NotPermitted
    | InvalidInput
    | NotFound
    | QueueEmpty
    | StaleLease
    | EvidenceChanged
    | InvalidReasonCode
    | AlreadySuperseded
    | InvalidTransition
    | AlreadyQueued
    | LeaseLimitReached
    | InvalidHoldReason
    | NotLeased
    | NotHeld
    | NotAssigned
    | ItemNotWaiting
    | ReauthenticationRequired
)


_FAILURE_CLASSES = get_args(Failure)


def is_failure(result: Any) -> TypeIs[Failure]:
    return isinstance(result, _FAILURE_CLASSES)
