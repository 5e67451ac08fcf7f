"""Parsing of identifiers that arrive as strings."""

from __future__ import annotations

from uuid import UUID

from server.domain.failures import InvalidInput

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
