"""Why a fenced exception write wrote nothing: one read of the record, and the first
condition that failed, in the order the fences check them."""

from __future__ import annotations

from uuid import UUID

from server.domain.exceptions import reads
from server.domain.exceptions.records import ALLOWED_FROM, ExceptionAction, ExceptionRecord
from server.domain.failures import InvalidInput, InvalidTransition, NotPermitted, StaleLease
from server.domain.model import Principal
from server.store.database import Database

Refusal = StaleLease | InvalidTransition | NotPermitted | InvalidInput


async def reload_exception(db: Database, exception_id: str) -> ExceptionRecord:
    found = await reads.exceptions_by_ids(db, [exception_id])
    return found[exception_id]


async def visible_exception(
    db: Database, principal: Principal, exception_id: str
) -> ExceptionRecord | None:
    """The exception if it exists and the token covers one of its queues; otherwise None,
    so that one outside the scope reads exactly as one that does not exist."""
    found = (await reads.exceptions_by_ids(db, [exception_id])).get(exception_id)
    if found is None or not reads.visible_to(principal, found):
        return None
    return found


def no_such_exception(exception_id: str) -> InvalidInput:
    return InvalidInput(f"no exception {exception_id}", "exceptionId")


def transition_refused(
    exception: ExceptionRecord, action: ExceptionAction, message: str | None = None
) -> InvalidTransition:
    allowed = tuple(a.value for a in exception.allowed_actions)
    if message is None:
        if exception.state not in ALLOWED_FROM[action]:
            message = (
                f"{action.value} is not allowed while the exception is "
                f"{exception.state.value}; allowed now: {', '.join(allowed) or 'nothing'}"
            )
        else:
            message = (
                f"reason {exception.reason_code!r} of workflow {exception.workflow!r} does not "
                f"allow {action.value}"
            )
    return InvalidTransition(exception.id, exception.state.value, action.value, allowed, message)


async def why_refused(
    db: Database,
    principal: Principal,
    action: ExceptionAction,
    exception_id: str,
    token: UUID | None,
    *,
    reason_code: str | None = None,
    stale_steps: list[str] | None = None,
    version: int | None = None,
) -> Refusal:
    """The fence refused the write; name the first condition that failed."""
    exception = await visible_exception(db, principal, exception_id)
    if exception is None:
        return no_such_exception(exception_id)
    if (
        exception.state not in ALLOWED_FROM[action]
        or action not in exception.reason_allowed_actions
    ):
        return transition_refused(exception, action)
    if token is not None:
        holds = (
            exception.item_pending
            and exception.lease_live
            and exception.lease_token == token
            and exception.lease_owner == principal.user
        )
        if not holds:
            return StaleLease(exception.item_id)
        if not principal.works_in(exception.item_queue):
            return NotPermitted(f"your token does not cover queue {exception.item_queue!r}")
    if reason_code is not None and reason_code != exception.reason_code:
        return InvalidInput(
            f"a correction is for the exception's own reason, {exception.reason_code!r}",
            "reasonCode",
        )
    if stale_steps and not set(stale_steps) <= set(exception.completed_steps):
        return InvalidInput("a stale step must be one of the completed steps", "staleSteps")
    if version is not None and version != exception.version:
        return InvalidInput(
            f"version {version} is not the current correction (v{exception.version})", "version"
        )
    if action is ExceptionAction.APPROVE_CORRECTION:
        corrections = await reads.corrections_of(db, exception_id)
        current = next((c for c in corrections if c.version == exception.version), None)
        if current is not None and current.corrected_by == principal.user:
            return NotPermitted("four-eyes: whoever submitted a correction may not approve it")
    if token is not None:
        # Every condition holds now, so it failed an instant ago: a concurrent write won.
        return StaleLease(exception.item_id)
    return transition_refused(exception, action)
