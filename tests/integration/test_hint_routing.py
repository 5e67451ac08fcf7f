"""With hints routed through the application, a hint leaves only after its commit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.domain.model import Claim
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.events.channels import parse_event
from server.store import sql
from server.store.database import Database, create_pool
from server.store.queries import Queries
from tests.conftest import INTEGRATION, TestDatabase, reviewer


class Published(list[str]):
    async def __call__(self, hint: str) -> None:
        self.append(hint)


@pytest.fixture
async def routed(
    test_database: TestDatabase, queries: Queries, kyc_queue: str
) -> AsyncIterator[tuple[Database, Published]]:
    published = Published()
    pool = await create_pool(
        test_database.app_dsn, min_size=1, max_size=2, server_settings={"casework.events": "app"}
    )
    try:
        yield Database(pool, queries, publish_hints=published), published
    finally:
        await pool.close()


async def test_each_committed_write_publishes_its_hint_once(
    routed: tuple[Database, Published],
) -> None:
    db, published = routed
    enqueued = await enqueue_items(
        db, INTEGRATION, "kyc", [NewItem(f"cust-{n}", {"n": n}) for n in range(3)]
    )
    assert isinstance(enqueued, list)
    claim = await claim_next(db, reviewer("alice"), "kyc")
    assert isinstance(claim, Claim)
    events = [parse_event(hint) for hint in published]
    assert [(e.kind, e.queue) if e else None for e in events] == [
        ("enqueued", "kyc"),
        ("claimed", "kyc"),
    ]


async def test_a_rolled_back_write_publishes_nothing(routed: tuple[Database, Published]) -> None:
    db, published = routed

    class Abandon(Exception):
        pass

    async def write_then_abandon() -> None:
        async with db.transaction() as tx:
            await tx.fetch(
                sql.items.ITEMS_UPSERT,
                queue="kyc",
                external_keys=["cust-1"],
                priorities=[0],
                payloads=[{}],
                evidence_hashes=["0" * 64],
                actor="kyc-provider",
                actor_role="integration",
                due_ats=[None],
                subject_refs=[None],
                policy_version=None,
            )
            assert published == [], "a hint left before its transaction committed"
            raise Abandon

    with pytest.raises(Abandon):
        await write_then_abandon()
    assert published == []
    rows = await db.fetch(
        sql.items.ITEMS_GET_BY_EXTERNAL_KEYS, origin_queue="kyc", external_keys=["cust-1"]
    )
    assert rows == []
