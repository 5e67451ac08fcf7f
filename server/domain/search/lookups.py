"""Look-ups by the keys integrations hold: an item's external key, an exception's source
record id. The key stays with the record through escalations and moves."""

from __future__ import annotations

from server.domain.model import Item, Principal
from server.domain.search.filters import AmbiguousKey
from server.store.database import Database


async def item_by_external_key(
    db: Database, principal: Principal, queue: str | None, external_key: str
) -> Item | AmbiguousKey | None:
    """The item enqueued under `external_key` (into `queue`, its origin, when given).

    Without a queue, every origin queue whose item the caller may see is looked in; a key
    found in more than one is AmbiguousKey. An item in a queue outside the caller's token
    reads as missing (None), as everywhere.
    """
    raise NotImplementedError("issue 30: look-up by external key")
