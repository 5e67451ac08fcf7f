"""What an event endpoint or a notification rule is scoped to (queues, or workflows), checked
one way: names the caller may change, that exist, and not too many; and which of them a
principal may see."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol, TypeVar

from server.domain.exceptions.workflows import workflows_in_scope
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal
from server.domain.review.queues import get_queues, not_covered
from server.store.database import Database

MAX_SCOPE = 100


async def scope_refusal(
    db: Database, principal: Principal, names: Sequence[str], *, by_queue: bool
) -> InvalidInput | NotPermitted | None:
    """Why `names` cannot be the scope (the field at fault named), or None."""
    field = "queues" if by_queue else "workflows"
    if not names or len(names) > MAX_SCOPE:
        return InvalidInput(f"name 1 to {MAX_SCOPE} {field}", field)
    if by_queue:
        for queue in names:
            if not principal.works_in(queue):
                return not_covered(queue)
        known = await get_queues(db, list(names))
        if missing := [name for name in names if name not in known]:
            return InvalidInput(f"unknown queue {missing[0][:100]!r}", field)
        return None
    changeable = await workflows_in_scope(db, principal, list(names))
    if missing := [name for name in names if name not in changeable]:
        # Another team's workflow answers as a missing one (workflows.unknown_workflow).
        return InvalidInput(f"unknown workflow {missing[0][:100]!r}", field)
    return None


class Scoped(Protocol):
    """An endpoint or a rule: scoped to queues or to workflows."""

    @property
    def queues(self) -> tuple[str, ...] | None: ...

    @property
    def workflows(self) -> tuple[str, ...] | None: ...


ScopedT = TypeVar("ScopedT", bound=Scoped)


async def visible(db: Database, principal: Principal, found: list[ScopedT]) -> list[ScopedT]:
    """What the principal may see and change: the token covers each queue, and may change
    each workflow (its queues, read here); the others read as nonexistent."""
    named = sorted({name for each in found for name in each.workflows or ()})
    changeable = await workflows_in_scope(db, principal, named) if named else {}
    return [
        each
        for each in found
        if all(map(principal.works_in, each.queues or ()))
        and all(name in changeable for name in each.workflows or ())
    ]


def parse_uuid(text: str | None) -> uuid.UUID | None:
    """An endpoint's, channel's or rule's id; None for anything that is not a UUID."""
    try:
        return uuid.UUID(text) if text is not None else None
    except ValueError:
        return None
