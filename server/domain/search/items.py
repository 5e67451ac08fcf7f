"""Searching items across the caller's queues (db/queries/search.sql)."""

from __future__ import annotations

from server.domain.failures import InvalidInput
from server.domain.model import Principal
from server.domain.search.filters import ItemPage, ItemSearch, SearchTooBroad
from server.store.database import Database


async def search_items(
    db: Database, principal: Principal, search: ItemSearch, first: int, after: str | None
) -> ItemPage | SearchTooBroad | InvalidInput:
    """One page of the items `search` matches, in its order, after the cursor `after`.

    InvalidInput names the filter at fault (as GraphQL spells it) for a contradictory or
    malformed search or cursor; SearchTooBroad when one page would read too many rows.
    """
    raise NotImplementedError("issue 30: item search")
