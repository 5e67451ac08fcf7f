"""Plan regression for the claim controls: with thousands of held items and of items
assigned to other reviewers ahead of the plain backlog, the claim still walks the partial
index review_items_claimable, and walks past none of them (they sit under `reserved` in
it); the assignee's own probe reads review_items_assigned. Generic and custom plans."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import plan_nodes, plan_outline

HISTORY = 20_000
PLAIN = 300
HELD = 3_000
ASSIGNED_ELSEWHERE = 3_000
CLAIM_INDEX = "review_items_claimable"
ASSIGNED_INDEX = "review_items_assigned"
# However many items are set aside, a claim reads about as many index entries as it takes.
MOST_ROWS_READ = 5

PLANS = pytest.mark.parametrize(
    "plan", ["force_custom_plan", "force_generic_plan"], ids=["custom", "generic"]
)


@pytest.fixture
async def set_aside(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    """kyc: a decided history, a plain backlog, and above it (by priority) thousands of
    held items and thousands assigned to someone else; a few assigned to `mine`."""
    await owner_conn.execute(
        """
        INSERT INTO hold_reasons (queue, code, label) VALUES ('kyc', 'waiting', 'Waiting');
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, state, decided_at)
        SELECT 'kyc', 'kyc', 'old-' || n, 0, '{}', repeat('0', 64), 'decided', now()
        FROM generate_series(1, $1::int) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash)
        SELECT 'kyc', 'kyc', 'plain-' || n, n % 5, '{}', repeat('0', 64)
        FROM generate_series(1, $2::int) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, held_until, hold_reason)
        SELECT 'kyc', 'kyc', 'held-' || n, 10, '{}', repeat('0', 64),
               now() + interval '1 day', 'waiting'
        FROM generate_series(1, $3::int) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, assigned_to, assigned_until)
        SELECT 'kyc', 'kyc', 'theirs-' || n, 10, '{}', repeat('0', 64),
               'reviewer-' || (n % 50), now() + interval '1 day'
        FROM generate_series(1, $4::int) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, assigned_to)
        SELECT 'kyc', 'kyc', 'mine-' || n, 1, '{}', repeat('0', 64), 'mine'
        FROM generate_series(1, 5) AS n;
        """.replace("$1::int", str(HISTORY))
        .replace("$2::int", str(PLAIN))
        .replace("$3::int", str(HELD))
        .replace("$4::int", str(ASSIGNED_ELSEWHERE))
    )
    await owner_conn.execute("ANALYZE review_items")


def claim_literals(queries: Queries, actor: str) -> str:
    arguments = queries.statement("item_claim_next").bind(
        {"queue": "kyc", "actor": actor, "actor_role": "reviewer"}
    )
    return ", ".join(f"'{value}'" for value in arguments)


async def explain(
    owner: asyncpg.Connection, queries: Queries, plan: str, actor: str, *, analyze: bool
) -> Any:
    """The claim's plan as `actor`; with `analyze`, run (in a transaction rolled back)."""
    await owner.execute(f"SET plan_cache_mode = {plan}")
    await owner.execute(f"PREPARE claim_next (text, text, text) AS {queries['item_claim_next']}")
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    # ANALYZE runs the claim: roll it back, so each test reads the same backlog.
    transaction = owner.transaction()
    await transaction.start()
    try:
        explained = await owner.fetchval(
            f"EXPLAIN ({options}) EXECUTE claim_next ({claim_literals(queries, actor)})"
        )
    finally:
        await transaction.rollback()
    return json.loads(explained) if isinstance(explained, str) else explained


def scans_of(document: Any, index: str) -> list[dict[str, Any]]:
    return [n for n in plan_nodes(document[0]["Plan"]) if n.get("Index Name") == index]


def rows_read(node: dict[str, Any]) -> int:
    """Index entries a scan produced plus those its filter threw away, over all its loops."""
    loops = node.get("Actual Loops", 1)
    return int((node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops)


@PLANS
async def test_the_claim_stays_on_the_claim_index_past_thousands_set_aside(
    set_aside: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    document = await explain(owner_conn, queries, plan, "planner", analyze=False)

    outline = plan_outline(document)
    assert ("Index Scan", CLAIM_INDEX) in outline, outline
    assert ("Index Scan", ASSIGNED_INDEX) in outline, outline
    assert ("Seq Scan", "review_items") not in outline, outline


@PLANS
async def test_a_claim_walks_past_no_held_or_assigned_item(
    set_aside: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    document = await explain(owner_conn, queries, plan, "planner", analyze=True)

    [general] = [n for n in scans_of(document, CLAIM_INDEX) if n.get("Actual Loops", 0) > 0]
    # The held and assigned items rank first by priority, yet none was read.
    assert rows_read(general) <= MOST_ROWS_READ, general
    [own] = scans_of(document, ASSIGNED_INDEX)
    assert rows_read(own) == 0, own


@PLANS
async def test_an_assignee_reads_its_own_assignments_only(
    set_aside: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    document = await explain(owner_conn, queries, plan, "mine", analyze=True)

    [own] = scans_of(document, ASSIGNED_INDEX)
    assert 1 <= rows_read(own) <= MOST_ROWS_READ, own
    # Its own assignment found, the general probe is never entered.
    assert all(n.get("Actual Loops", 0) == 0 for n in scans_of(document, CLAIM_INDEX))


@PLANS
async def test_the_held_counts_read_the_set_aside_items_only(
    set_aside: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    await owner_conn.execute(f"SET plan_cache_mode = {plan}")
    await owner_conn.execute(f"PREPARE holds AS {queries['hold_counts_get_by_queues']}")

    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) EXECUTE holds (ARRAY['kyc', 'kyc-senior']::text[])"
    )

    assert ("Seq Scan", "review_items") not in plan_outline(explained), explained
