"""The object types of the claim controls: a hold, an assignment, a hold reason."""

from __future__ import annotations

from datetime import datetime

import strawberry

from server.domain import model


@strawberry.type(description="An item parked until a time (holdItem).")
class Hold:
    until: datetime
    reason: str = strawberry.field(description="A code of the queue's holdReasons.")


@strawberry.type(description="An item reserved for one reviewer (assignItem).")
class Assignment:
    reviewer: str
    until: datetime | None = strawberry.field(description="Null: until unassigned or decided.")


@strawberry.type(description="A hold reason of a queue's catalogue.")
class HoldReason:
    code: str
    label: str

    @classmethod
    def from_domain(cls, reason: model.HoldReason) -> HoldReason:
        return cls(code=reason.code, label=reason.label)
