"""Plan regression: the claim walks the partial index of pending items, not the history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from server.store.queries import Queries

PER_QUEUE = 3_000
CLAIM_INDEX = "review_items_claimable"


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def plan_outline(explained: Any) -> list[tuple[str, str | None]]:
    document = json.loads(explained) if isinstance(explained, str) else explained
    return [
        (node["Node Type"], node.get("Index Name") or node.get("Relation Name"))
        for node in plan_nodes(document[0]["Plan"])
    ]


@pytest.fixture
async def history(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    """Two queues, each with a long decided history and a short pending backlog."""
    await owner_conn.execute(
        """
        INSERT INTO review_items
            (origin_queue, queue, external_key, priority, payload, evidence_hash,
             state, decided_at)
        SELECT q, q, 'cust-' || n, n % 5, jsonb_build_object('n', n), repeat('0', 64),
               CASE WHEN n % 10 = 0 THEN 'pending' ELSE 'decided' END,
               CASE WHEN n % 10 = 0 THEN NULL ELSE now() END
        FROM generate_series(1, $1::int) AS n, unnest(ARRAY['kyc', 'kyc-senior']) AS q
        """,
        PER_QUEUE,
    )
    await owner_conn.execute("ANALYZE review_items")


async def test_custom_plan_uses_the_claimable_index(
    history: None, owner_conn: asyncpg.Connection, queries: Queries
) -> None:
    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) " + queries["item_claim_next"], "kyc", "planner", "reviewer"
    )

    outline = plan_outline(explained)
    assert ("Index Scan", CLAIM_INDEX) in outline, outline


async def test_generic_plan_uses_the_claimable_index(
    history: None, owner_conn: asyncpg.Connection, queries: Queries
) -> None:
    # A pool reuses prepared statements, so the generic plan is the one that runs in the end.
    await owner_conn.execute("SET plan_cache_mode = force_generic_plan")
    await owner_conn.execute(
        f"PREPARE claim_next (text, text, text) AS {queries['item_claim_next']}"
    )

    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) EXECUTE claim_next ('kyc', 'planner', 'reviewer')"
    )

    outline = plan_outline(explained)
    assert ("Index Scan", CLAIM_INDEX) in outline, outline
