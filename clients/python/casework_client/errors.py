"""Typed errors. Every member of a result union that implements the schema's `Error`
interface (an expected failure: nothing was written) has a class here, raised by the helpers
in place of returning it; `raise_for_result` does the same for any generated result.

Failures of the request itself (HTTP, a GraphQL error such as an unknown queue on a
subscription, a socket closed for a revoked token) are `RequestError`.
"""

from __future__ import annotations

from typing import Any, ClassVar


class CaseworkError(Exception):
    """Everything this package raises on purpose."""


class RequestError(CaseworkError):
    """The request failed as a whole: HTTP status, GraphQL errors, or the socket was refused.
    `code` is the error's `extensions.code` when the server gave one (UNAUTHENTICATED,
    FORBIDDEN, BAD_USER_INPUT, ...)."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class WebhookVerificationError(CaseworkError):
    """A webhook's signature is missing, wrong, or too old: answer 401 and do nothing."""


class WaitTimeout(CaseworkError, TimeoutError):
    """wait_for_decision gave up: no decision within the timeout. Never an approval."""


class ResultError(CaseworkError):
    """A union member implementing `Error`. `result` is the generated model, with every
    field the operation selected; `typename` its GraphQL type."""

    typename: ClassVar[str] = ""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.message: str = getattr(result, "message", "")
        super().__init__(f"{self.typename or type(result).__name__}: {self.message}")


class AmbiguousExternalKeyError(ResultError):
    typename = "AmbiguousExternalKey"


class AmbiguousSourceRecordIdError(ResultError):
    typename = "AmbiguousSourceRecordId"


class AlreadyQueuedError(ResultError):
    typename = "AlreadyQueued"


class AlreadySupersededError(ResultError):
    typename = "AlreadySuperseded"


class EvidenceChangedError(ResultError):
    typename = "EvidenceChanged"


class FieldErasedError(ResultError):
    typename = "FieldErased"


class FourEyesRequiredError(ResultError):
    typename = "FourEyesRequired"


class InvalidHoldReasonError(ResultError):
    typename = "InvalidHoldReason"


class InvalidInputError(ResultError):
    """`field`: the input field at fault, when the server names one."""

    typename = "InvalidInput"

    @property
    def field(self) -> str | None:
        value = getattr(self.result, "field", None)
        return value if isinstance(value, str) else None


class InvalidReasonCodeError(ResultError):
    typename = "InvalidReasonCode"


class InvalidTransitionError(ResultError):
    typename = "InvalidTransition"


class ItemNotWaitingError(ResultError):
    typename = "ItemNotWaiting"


class LeaseLimitReachedError(ResultError):
    typename = "LeaseLimitReached"


class NotAssignedError(ResultError):
    typename = "NotAssigned"


class NotFoundError(ResultError):
    typename = "NotFound"


class NotHeldError(ResultError):
    typename = "NotHeld"


class NotLeasedError(ResultError):
    typename = "NotLeased"


class NotPermittedError(ResultError):
    typename = "NotPermitted"


class QueueEmptyError(ResultError):
    typename = "QueueEmpty"


class ReauthenticationRequiredError(ResultError):
    typename = "ReauthenticationRequired"


class StaleLeaseError(ResultError):
    typename = "StaleLease"


class UserNotFoundError(ResultError):
    typename = "UserNotFound"


ERRORS: dict[str, type[ResultError]] = {
    cls.typename: cls
    for cls in (
        AlreadyQueuedError,
        AmbiguousExternalKeyError,
        AmbiguousSourceRecordIdError,
        AlreadySupersededError,
        EvidenceChangedError,
        FieldErasedError,
        FourEyesRequiredError,
        InvalidHoldReasonError,
        InvalidInputError,
        InvalidReasonCodeError,
        InvalidTransitionError,
        ItemNotWaitingError,
        LeaseLimitReachedError,
        NotAssignedError,
        NotFoundError,
        NotHeldError,
        NotLeasedError,
        NotPermittedError,
        QueueEmptyError,
        ReauthenticationRequiredError,
        StaleLeaseError,
        UserNotFoundError,
    )
}


def raise_for_result(result: Any) -> None:
    """Raises the typed error for a union member implementing `Error`; returns for any
    other (a success)."""
    error = ERRORS.get(getattr(result, "typename__", ""))
    if error is not None:
        raise error(result)
