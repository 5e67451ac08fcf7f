"""Batched reads for the GraphQL loaders: one query per kind of row, whatever the count."""

from __future__ import annotations

from server.domain.model import (
    Authentication,
    CredentialKind,
    Decision,
    DecisionStatus,
    Item,
    ItemState,
)
from server.domain.rows import grouped
from server.store import sql
from server.store.database import Database


async def items_by_ids(db: Database, ids: list[int]) -> dict[int, Item]:
    rows = await db.fetch(sql.items.ITEMS_GET_BY_IDS, ids=ids)
    return {row["id"]: Item.from_row(row) for row in rows}


async def decisions_by_ids(db: Database, ids: list[int]) -> dict[int, Decision]:
    rows = await db.fetch(sql.decisions_read.DECISIONS_GET_BY_IDS, ids=ids)
    return {row["id"]: Decision.from_row(row) for row in rows}


async def decisions_by_item_ids(db: Database, item_ids: list[int]) -> dict[int, list[Decision]]:
    rows = await db.fetch(sql.decisions_read.DECISIONS_GET_BY_ITEM_IDS, item_ids=item_ids)
    return grouped(item_ids, "item_id", rows, Decision.from_row)


async def authentications_by_ids(db: Database, ids: list[int]) -> dict[int, Authentication]:
    """How the actors of recorded rows authenticated, by their `authentication_id`."""
    rows = await db.fetch(sql.authentications.AUTHENTICATIONS_GET_BY_IDS, ids=ids)
    return {
        row["id"]: Authentication(
            kind=CredentialKind(row["kind"]),
            issuer=row["issuer"],
            subject=row["subject"],
            session_id=row["session_id"],
            token_id=row["token_id"],
            client_id=row["client_id"],
            auth_time=row["auth_time"],
            acr=row["acr"],
            rules=tuple(row["rules"]),
            id=row["id"],
        )
        for row in rows
    }


def effective_decision(decisions: list[Decision]) -> Decision | None:
    """The decision that stands: the last verdict that nothing supersedes and that does not
    wait for its second review (a provisional decision does not stand until confirmed)."""
    standing = [d for d in decisions if d.status is DecisionStatus.EFFECTIVE]
    return standing[-1] if standing else None


async def items_pages(
    db: Database, queues: list[str], state: ItemState | None, after: int, first: int
) -> dict[str, list[Item]]:
    """The same page (state, after, first) of several queues, in one query."""
    rows = await db.fetch(
        sql.items.ITEMS_GET_PAGES,
        queues=queues,
        state=state.value if state else None,
        after_id=after,
        page_size=first,
    )
    return grouped(queues, "queue", rows, Item.from_row)


async def decisions_pages(
    db: Database, queues: list[str], after: int, first: int
) -> dict[str, list[Decision]]:
    """The same page (after, first) of several queues' decisions, in one query."""
    by_queue: dict[str, list[Decision]] = {queue: [] for queue in queues}
    rows = await db.fetch(
        sql.decisions_read.DECISIONS_GET_PAGES, queues=queues, after_id=after, page_size=first
    )
    for row in rows:
        by_queue[row["queue"]].append(Decision.from_row(row))
    return by_queue
