"""Retention classes: how long the personal data of a policy queue's items is kept, counted
from which moment, and on what legal basis.

A class is defined once and never changed: a queue's policy names it, erasures are deferred
and carried out by it, and a class that could be shortened after the fact would rewrite what
a deferral promised. A longer or shorter period is a new class, put in force by a new
version of the queue's policy.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Role
from server.store import sql
from server.store.database import Database

NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")
MAX_BASIS = 500
SECONDS_PER_DAY = 86_400
# A century: beyond any record-keeping law, and well inside PostgreSQL's intervals.
MAX_KEEP_SECONDS = 100 * 366 * SECONDS_PER_DAY
# Who may define a class: the people who answer for the legal basis.
DEFINERS = frozenset({Role.ADMIN, Role.COMPLIANCE})


class RetentionAnchor(enum.Enum):
    ENQUEUED = "enqueued"  # from the item's first enqueue
    DECIDED = "decided"  # from the item's effective decision
    RELATIONSHIP_ENDED = "relationship_ended"  # from reportRelationshipEnded for the subject


@dataclass(frozen=True)
class RetentionClass:
    name: str
    keep_seconds: int
    anchor: RetentionAnchor
    basis: str
    created_by: str
    created_at: datetime

    @property
    def keep_days(self) -> float:
        return self.keep_seconds / SECONDS_PER_DAY

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RetentionClass:
        return cls(
            name=row["name"],
            keep_seconds=row["keep_seconds"],
            anchor=RetentionAnchor(row["anchor"]),
            basis=row["basis"],
            created_by=row["created_by"],
            created_at=row["created_at"],
        )


@dataclass(frozen=True)
class RetentionClassInput:
    name: str
    anchor: RetentionAnchor
    basis: str
    # Exactly one of the two.
    keep_days: int | None = None
    keep_seconds: int | None = None


def _keep_seconds(definition: RetentionClassInput) -> int | InvalidInput:
    if (definition.keep_days is None) == (definition.keep_seconds is None):
        return InvalidInput("give the period as keepDays or keepSeconds (one of them)", "keepDays")
    if definition.keep_days is not None:
        seconds, where = definition.keep_days * SECONDS_PER_DAY, "keepDays"
    else:
        assert definition.keep_seconds is not None
        seconds, where = definition.keep_seconds, "keepSeconds"
    if not 1 <= seconds <= MAX_KEEP_SECONDS:
        return InvalidInput(
            f"the period must be positive and at most {MAX_KEEP_SECONDS // SECONDS_PER_DAY} days",
            where,
        )
    return seconds


async def define_retention_class(
    db: Database, principal: Principal, definition: RetentionClassInput
) -> RetentionClass | NotPermitted | InvalidInput:
    """Defines a class, once (admins and compliance officers). A name taken already is
    refused, whatever its definition: a class is never redefined."""
    if principal.role not in DEFINERS:
        return NotPermitted("only an admin or a compliance officer may define a retention class")
    if not NAME.fullmatch(definition.name):
        return InvalidInput(
            "a retention class name is 1 to 63 characters of a-z, 0-9, '_', '.' and '-', "
            "starting with a letter or digit",
            "name",
        )
    basis = definition.basis.strip()
    if not 1 <= len(basis) <= MAX_BASIS:
        return InvalidInput(f"the basis must be 1 to {MAX_BASIS} characters", "basis")
    seconds = _keep_seconds(definition)
    if isinstance(seconds, InvalidInput):
        return seconds
    row = await db.fetchrow(
        sql.privacy_policy.RETENTION_CLASS_DEFINE,
        name=definition.name,
        keep_seconds=seconds,
        anchor=definition.anchor.value,
        basis=basis,
        **principal.actor(),
    )
    if row is None:
        return InvalidInput(
            f"retention class {definition.name!r} is defined already, and a class is never "
            "redefined: define one under a new name and put it in the queue's policy",
            "name",
        )
    return RetentionClass.from_row(row)


async def retention_classes(db: Database) -> list[RetentionClass]:
    """Every class, by name. Any role may read them: they hold no personal data."""
    return [
        RetentionClass.from_row(row)
        for row in await db.fetch(sql.privacy_policy.RETENTION_CLASSES_LIST)
    ]
