"""Integrations retry and overlap: batches sharing keys neither deadlock nor duplicate."""

from __future__ import annotations

import asyncio

from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION

KEYS = [f"case-{n:03d}" for n in range(200)]


async def test_overlapping_batches_in_opposite_orders(db: Database, kyc_queue: str) -> None:
    forward = [NewItem(key, {"key": key}) for key in KEYS]
    backward = list(reversed(forward))
    results = await asyncio.gather(
        *(
            enqueue_items(db, INTEGRATION, kyc_queue, batch)
            for _ in range(4)
            for batch in (forward, backward)
        )
    )
    created = 0
    ids_by_key: dict[str, set[int]] = {key: set() for key in KEYS}
    for result in results:
        assert isinstance(result, list), result
        for entry in result:
            created += entry.created
            ids_by_key[entry.item.external_key].add(entry.item.id)
    assert created == len(KEYS)
    assert all(len(ids) == 1 for ids in ids_by_key.values())
