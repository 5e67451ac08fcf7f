"""Pages of a connection: opaque keyset cursors, the page size a client may ask for, PageInfo."""

from __future__ import annotations

import base64
from collections.abc import Sequence, Sized
from typing import Protocol

import strawberry

from server.graphql.codes import ClientError

MAX_PAGE = 200


def encode_cursor(kind: str, row_id: int | str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{row_id}".encode()).decode()


def decode_cursor(kind: str, cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        prefix, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix == kind and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ClientError(f"malformed cursor {cursor[:40]!r}")


def decode_text_cursor(kind: str, cursor: str | None) -> str:
    """For rows keyed by text ids that sort in creation order (exceptions)."""
    if cursor is None:
        return ""
    try:
        prefix, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix == kind and value:
            return value
    except (ValueError, UnicodeDecodeError):
        pass
    raise ClientError(f"malformed cursor {cursor[:40]!r}")


def page_size(first: int) -> int:
    if not 1 <= first <= MAX_PAGE:
        raise ClientError(f"first must be between 1 and {MAX_PAGE}")
    return first


class _Edge(Protocol):
    @property
    def cursor(self) -> str: ...


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None

    @classmethod
    def of(cls, edges: Sequence[_Edge], read: Sized) -> PageInfo:
        """The page of `edges`, made of the first rows `read`: every connection reads one row
        past the page, so a row more than there are edges means a next page."""
        return cls.ending(edges, has_next_page=len(read) > len(edges))

    @classmethod
    def ending(cls, edges: Sequence[_Edge], *, has_next_page: bool) -> PageInfo:
        """The page of `edges`, where the domain has said whether another follows."""
        return cls(has_next_page=has_next_page, end_cursor=edges[-1].cursor if edges else None)
