"""Searching decisions across the caller's queues (db/queries/search_decisions.sql)."""

from __future__ import annotations

from server.domain.failures import InvalidInput
from server.domain.model import Principal
from server.domain.search.filters import DecisionPage, DecisionSearch, SearchTooBroad
from server.store.database import Database


async def search_decisions(
    db: Database, principal: Principal, search: DecisionSearch, first: int, after: str | None
) -> DecisionPage | SearchTooBroad | InvalidInput:
    """One page of the decisions `search` matches, in its order, after the cursor `after`."""
    raise NotImplementedError("issue 30: decision search")
