"""A queue's payload policy: a class for each payload path, and who sees which class.

A path names a value in the payload by its object keys joined with dots
(`applicant.date_of_birth`). The value at a listed path is taken whole, whatever its type;
an object on the way to a listed path is walked; anything else is unlisted. Keys holding a
dot cannot be named, so a payload with one under a policy is refused (see `split_payload`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from server.domain.failures import InvalidInput
from server.domain.model import Role
from server.store import sql
from server.store.database import Database

MAX_POLICY_PATHS = 500
MAX_PATH_LENGTH = 500


class FieldClass(enum.Enum):
    PUBLIC = "public"  # stored as is, shown to every role the policy lets read the queue
    PERSONAL = "personal"  # encrypted per subject; shown to the roles the policy names
    SENSITIVE = "sensitive"  # encrypted per subject; masked until revealed with a reason
    REFERENCE = "reference"  # a document id or URL with its digest: stored as is
    SECRET = "secret"  # a password or key sent by mistake: the enqueue is refused

    @property
    def encrypted(self) -> bool:
        return self in (FieldClass.PERSONAL, FieldClass.SENSITIVE)


class Unlisted(enum.Enum):
    DROP = "drop"  # paths the policy does not list are dropped, and the answer names them
    REFUSE = "refuse"  # ... or the enqueue is refused


# What each role sees without a reveal when a policy does not say.
DEFAULT_VISIBLE: Mapping[Role, frozenset[FieldClass]] = {
    Role.REVIEWER: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE, FieldClass.PERSONAL}),
    Role.APPROVER: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE, FieldClass.PERSONAL}),
    Role.COMPLIANCE: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE, FieldClass.PERSONAL}),
    Role.MANAGER: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE}),
    Role.ADMIN: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE}),
    Role.INTEGRATION: frozenset({FieldClass.PUBLIC, FieldClass.REFERENCE}),
}
DEFAULT_REVEAL_ROLES = frozenset({Role.REVIEWER, Role.APPROVER, Role.COMPLIANCE})


@dataclass(frozen=True)
class PrivacyPolicy:
    queue: str
    version: int
    fields: Mapping[str, FieldClass]
    unlisted: Unlisted = Unlisted.DROP
    visible: Mapping[Role, frozenset[FieldClass]] = field(default_factory=lambda: DEFAULT_VISIBLE)
    reveal_roles: frozenset[Role] = DEFAULT_REVEAL_ROLES
    retention_class: str | None = None
    # Who put this version in force, and when (None on a policy not read from the database).
    created_by: str | None = field(default=None, compare=False)
    created_at: datetime | None = field(default=None, compare=False)

    def sees(self, role: Role, field_class: FieldClass) -> bool:
        """Whether `role` is shown a value of this class without revealing it."""
        if field_class is FieldClass.SENSITIVE:
            return False
        return field_class in self.visible.get(role, frozenset())

    def may_reveal(self, role: Role) -> bool:
        return role in self.reveal_roles

    @property
    def has_encrypted_fields(self) -> bool:
        return any(c.encrypted for c in self.fields.values())

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PrivacyPolicy:
        return cls(
            queue=row["queue"],
            version=row["version"],
            fields={path: FieldClass(c) for path, c in row["fields"].items()},
            unlisted=Unlisted(row["unlisted"]),
            visible={
                Role(role): frozenset(FieldClass(c) for c in classes)
                for role, classes in row["visible"].items()
            },
            reveal_roles=frozenset(Role(r) for r in row["reveal_roles"]),
            retention_class=row["retention_class"],
            created_by=row.get("created_by"),
            created_at=row.get("created_at"),
        )

    def stored_fields(self) -> dict[str, str]:
        return {path: c.value for path, c in sorted(self.fields.items())}

    def stored_visible(self) -> dict[str, list[str]]:
        return {
            role.value: sorted(c.value for c in classes)
            for role, classes in sorted(self.visible.items(), key=lambda kv: kv[0].value)
        }


def check_paths(fields: Mapping[str, FieldClass], where: str = "fields") -> InvalidInput | None:
    """A policy's paths: dotted object keys, none empty, none inside another listed path."""
    if not fields:
        return InvalidInput("a policy lists at least one path", where)
    if len(fields) > MAX_POLICY_PATHS:
        return InvalidInput(f"a policy lists at most {MAX_POLICY_PATHS} paths", where)
    for path in fields:
        if not 1 <= len(path) <= MAX_PATH_LENGTH or any(not step for step in path.split(".")):
            return InvalidInput(
                f"path {path[:80]!r} must be object keys joined with dots, none empty", where
            )
        steps = path.split(".")
        for end in range(1, len(steps)):
            if ".".join(steps[:end]) in fields:
                return InvalidInput(
                    f"path {path!r} lies inside {'.'.join(steps[:end])!r}, which is listed "
                    "whole: list one or the other",
                    where,
                )
    return None


@dataclass(frozen=True)
class SplitPayload:
    """A payload as a policy sees it: each listed value by path and class, and what the
    policy refuses or drops (by path, never by value)."""

    values: dict[str, tuple[FieldClass, Any]]
    unlisted: tuple[str, ...]
    secrets: tuple[str, ...]

    def public_payload(self) -> dict[str, Any]:
        """What `review_items.payload` keeps: the public and reference values, in place."""
        kept: dict[str, Any] = {}
        for path, (field_class, value) in self.values.items():
            if field_class in (FieldClass.PUBLIC, FieldClass.REFERENCE):
                place(kept, path, value)
        return kept


def place(target: dict[str, Any], path: str, value: Any) -> None:
    """Puts `value` at `path`, making the objects on the way."""
    *parents, last = path.split(".")
    for step in parents:
        target = target.setdefault(step, {})
    target[last] = value


def split_payload(policy: PrivacyPolicy, payload: Mapping[str, Any]) -> SplitPayload:
    values: dict[str, tuple[FieldClass, Any]] = {}
    unlisted: list[str] = []
    secrets: list[str] = []
    prefixes = {
        ".".join(path.split(".")[:end])
        for path in policy.fields
        for end in range(1, path.count(".") + 1)
    }

    def walk(node: Mapping[str, Any], trail: str) -> None:
        for key, value in node.items():
            path = f"{trail}.{key}" if trail else key
            listed = policy.fields.get(path)
            if "." in key:
                unlisted.append(path)
            elif listed is FieldClass.SECRET:
                secrets.append(path)
            elif listed is not None:
                values[path] = (listed, value)
            elif path in prefixes and isinstance(value, Mapping):
                walk(value, path)
            else:
                unlisted.append(path)

    walk(payload, "")
    return SplitPayload(values=values, unlisted=tuple(unlisted), secrets=tuple(secrets))


async def current_policy(db: Database, queue: str) -> PrivacyPolicy | None:
    row = await db.fetchrow(sql.privacy.POLICY_GET_CURRENT, queue=queue)
    return None if row is None else PrivacyPolicy.from_row(row)
