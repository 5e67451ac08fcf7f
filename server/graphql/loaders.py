"""Per-request DataLoaders: a nested read costs one query per kind of row."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import TypeVar

from strawberry.dataloader import DataLoader

from server.domain import queues, reads
from server.domain.model import Decision, Item, Queue, ReasonCode
from server.store.database import Database

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _loader(
    db: Database, fetch: Callable[[Database, list[K]], Awaitable[Mapping[K, V]]], missing: V
) -> DataLoader[K, V]:
    async def load(keys: list[K]) -> list[V]:
        found = await fetch(db, list(keys))
        return [found.get(key, missing) for key in keys]

    return DataLoader(load_fn=load)


class Loaders:
    def __init__(self, db: Database) -> None:
        self.item: DataLoader[int, Item | None] = _loader(db, reads.items_by_ids, None)
        self.decision: DataLoader[int, Decision | None] = _loader(db, reads.decisions_by_ids, None)
        self.item_decisions: DataLoader[int, list[Decision]] = _loader(
            db, reads.decisions_by_item_ids, []
        )
        self.queue: DataLoader[str, Queue | None] = _loader(db, queues.get_queues, None)
        self.reason_codes: DataLoader[str, list[ReasonCode]] = _loader(
            db, queues.get_reason_codes, []
        )
