"""Parsing of identifiers that arrive as strings, and what text and JSON must be to be stored."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Role

MAX_ID = 2**63 - 1


def parse_id(value: str, field: str) -> int | InvalidInput:
    if not value.isascii() or not value.isdigit() or not 0 < int(value) <= MAX_ID:
        return InvalidInput(f"{field} must be a positive integer id, got {value[:40]!r}", field)
    return int(value)


def parse_lease_token(value: str) -> UUID | InvalidInput:
    try:
        return UUID(value)
    except ValueError:
        return InvalidInput("leaseToken is not a lease token", "leaseToken")


def parse_item_lease(item_id: str, lease_token: str) -> tuple[int, UUID] | InvalidInput:
    """An item's id and the token of the lease it is claimed under (a lease-fenced write)."""
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    token = parse_lease_token(lease_token)
    if isinstance(token, InvalidInput):
        return token
    return parsed, token


class LeaseInput(Protocol):
    """A write's input that names an item and the lease it is claimed under."""

    @property
    def item_id(self) -> str: ...

    @property
    def lease_token(self) -> str: ...


def reviewer_lease(
    principal: Principal, write: LeaseInput, *, refused: str
) -> tuple[int, UUID] | NotPermitted | InvalidInput:
    """A reviewer's write under a lease (`parse_item_lease`); `refused` is what any other
    role is told."""
    if principal.role is not Role.REVIEWER:
        return NotPermitted(refused)
    return parse_item_lease(write.item_id, write.lease_token)


def holds_lease(found: Mapping[str, Any], token: UUID, user: str) -> bool:
    """Whether a refused write's diagnosis row (its `state`, `lease_live`, `lease_token` and
    `lease_owner` columns) shows `user`'s live lease with this token on a pending item."""
    return (
        found["state"] == "pending"
        and bool(found["lease_live"])
        and found["lease_token"] == token
        and found["lease_owner"] == user
    )


# What PostgreSQL cannot store in text or jsonb: NUL, and lone surrogates (not UTF-8).
UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")


def unstorable(value: str) -> str | None:
    """Why PostgreSQL could not store the string, or None if it can."""
    found = UNSTORABLE_CHARACTER.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return f"contains a NUL character (at {found.start()}), which cannot be stored"
    return (
        f"contains a lone surrogate (U+{ord(found.group()):04X} at {found.start()}): "
        "it is not valid Unicode text"
    )


# Payloads, context and changes are records of facts, a few levels deep.
MAX_VALUE_DEPTH = 32


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether a JSON value nests objects and arrays more than `limit` deep.

    A loop over an explicit stack: json.dumps and PostgreSQL's jsonb input both recurse per
    level, so the depth is checked before either sees the value.
    """
    stack = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict | list):
            if depth >= limit:
                return True
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, depth + 1) for child in children)
    return False


def check_instant(value: datetime | None, field: str) -> InvalidInput | None:
    """A moment a client names (an end, a due time) must say its time zone: a bare local
    time means a different instant on every machine that reads it."""
    if value is not None and value.utcoffset() is None:
        return InvalidInput(f"{field} must carry a time zone offset (or Z)", field)
    return None
