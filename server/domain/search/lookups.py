"""Look-ups by the keys integrations hold: an item's external key, an exception's source
record id. The key stays with the record through escalations and moves."""

from __future__ import annotations

from server.domain.model import Item, Principal
from server.domain.search.filters import AmbiguousKey
from server.store import sql
from server.store.database import Database


async def item_by_external_key(
    db: Database, principal: Principal, queue: str | None, external_key: str
) -> Item | AmbiguousKey | None:
    """The item enqueued under `external_key` (into `queue`, its origin, when given).

    Without a queue, every origin queue whose item the caller may see is looked in; a key
    found in more than one is AmbiguousKey. An item in a queue outside the caller's token
    reads as missing (None), as everywhere.
    """
    rows = await db.fetch(
        sql.lookups.ITEMS_GET_BY_EXTERNAL_KEY, external_key=external_key, origin_queue=queue
    )
    # Visible as `Query.item` decides: by the queue the item is in now, not where it began.
    visible = [item for item in map(Item.from_row, rows) if principal.works_in(item.queue)]
    if not visible:
        return None
    if len(visible) > 1:
        origins = tuple(sorted(item.origin_queue for item in visible))
        return AmbiguousKey(
            f"external key {external_key!r} names an item in each of the queues "
            f"{', '.join(origins)}: ask again with one of them as `queue`",
            external_key,
            origins,
        )
    return visible[0]
