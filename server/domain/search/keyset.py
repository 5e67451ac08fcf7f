"""Keyset cursors of searches: the sort key of the last row a page showed.

A cursor names its kind and order as well, so one taken from another list or order is
refused as bad input rather than read as a position in this one. It is opaque to clients
(base64url) but not secret: it holds only a time and an id the caller has already seen.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput
from server.domain.search.filters import SearchOrder


@dataclass(frozen=True)
class Keyset:
    """A row's place in a search's order: its activity time, then its id."""

    at: datetime
    id: int


def encode_keyset(kind: str, order: SearchOrder, position: Keyset) -> str:
    text = f"{kind}|{order.value}|{position.at.isoformat()}|{position.id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_keyset(
    kind: str, order: SearchOrder, cursor: str | None
) -> Keyset | InvalidInput | None:
    """The position after which the next page starts; None for the first page."""
    if cursor is None:
        return None
    refusal = InvalidInput(
        f"after: not a cursor of this search's {kind} in this order; start again without it",
        "after",
    )
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        text = base64.urlsafe_b64decode(padded.encode()).decode()
        cursor_kind, cursor_order, at, row_id = text.split("|")
        if (cursor_kind, cursor_order) != (kind, order.value) or not row_id.isdigit():
            return refusal
        when = datetime.fromisoformat(at)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        return refusal
    if when.tzinfo is None:
        return refusal
    return Keyset(at=when, id=int(row_id))
