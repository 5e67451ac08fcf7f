"""Plan regression: the claim walks the partial index of pending items, not the history."""

from __future__ import annotations

import asyncpg
import pytest

from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import plan_outline

PER_QUEUE = 3_000
CLAIM_INDEX = "review_items_claimable"


def claim_arguments(queries: Queries) -> list[str]:
    """The claim's parameters in $n order, which the statement decides from its names."""
    return queries.statement("item_claim_next").bind(
        {"queue": "kyc", "actor": "planner", "actor_role": "reviewer"}
    )


def claim_literals(queries: Queries) -> str:
    return ", ".join(f"'{value}'" for value in claim_arguments(queries))


async def prepared_claim_outline(
    conn: asyncpg.Connection, queries: Queries, mode: str
) -> list[tuple[str, str | None]]:
    """The plan outline of the claim, prepared and run under plan_cache_mode `mode`."""
    await conn.execute(f"SET plan_cache_mode = {mode}")
    await conn.execute(f"PREPARE claim_next (text, text, text) AS {queries['item_claim_next']}")
    explained = await conn.fetchval(
        f"EXPLAIN (FORMAT JSON) EXECUTE claim_next ({claim_literals(queries)})"
    )
    return plan_outline(explained)


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
        "EXPLAIN (FORMAT JSON) " + queries["item_claim_next"], *claim_arguments(queries)
    )

    outline = plan_outline(explained)
    assert ("Index Scan", CLAIM_INDEX) in outline, outline


async def test_generic_plan_uses_the_claimable_index(
    history: None, owner_conn: asyncpg.Connection, queries: Queries
) -> None:
    # A pool reuses prepared statements, so the generic plan is the one that runs in the end.
    outline = await prepared_claim_outline(owner_conn, queries, "force_generic_plan")
    assert ("Index Scan", CLAIM_INDEX) in outline, outline


@pytest.fixture
async def overdue_elsewhere(history: None, owner_conn: asyncpg.Connection) -> None:
    """Thousands of overdue exceptions of another workflow: none of the claim's business."""
    await owner_conn.execute(
        """
        INSERT INTO queues (name) VALUES ('ops'), ('ops-leads'), ('ops-approvals');
        INSERT INTO workflows (name, approval_queue) VALUES ('ops_flow', 'ops-approvals');
        INSERT INTO exception_reasons (workflow, code, label, owner_role, escalation_role,
                                       allowed_actions, due_low_seconds, due_medium_seconds,
                                       due_high_seconds, due_critical_seconds)
        VALUES ('ops_flow', 'stuck', 'stuck', 'ops', 'ops-leads', ARRAY['attach_evidence'],
                60, 60, 60, 60);
        WITH items AS (
            INSERT INTO review_items (origin_queue, queue, external_key, payload,
                                      evidence_hash, kind)
            SELECT 'ops', 'ops', 'exc_' || lpad(n::text, 20, '0'), '{}', repeat('0', 64),
                   'exception'
            FROM generate_series(1, 3000) AS n
            RETURNING id, external_key
        )
        INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail,
                                consequence, owner_role, escalation_role, due_at, item_id)
        SELECT external_key, 'ops_flow', 'rec-' || id, 'stuck', 'stuck', 'low', 'ops',
               'ops-leads', now() - interval '1 day', id
        FROM items;
        ANALYZE review_items;
        ANALYZE exceptions;
        """
    )


@pytest.mark.parametrize("mode", ["force_custom_plan", "force_generic_plan"])
async def test_a_claim_never_walks_other_queues_overdue_exceptions(
    overdue_elsewhere: None, owner_conn: asyncpg.Connection, queries: Queries, mode: str
) -> None:
    outline = await prepared_claim_outline(owner_conn, queries, mode)

    # Overdue exceptions are looked up by item id (for exception items only) and by queue,
    # through the partial indexes in due order; the table is never scanned whole.
    assert ("Index Scan", CLAIM_INDEX) in outline, outline
    scans_of_exceptions = sorted(
        (kind, target)
        for kind, target in outline
        if target is not None and target.startswith("exceptions")
    )
    assert scans_of_exceptions == [
        ("Index Scan", "exceptions_item_id_key"),
        ("Index Scan", "exceptions_overdue_by_escalation"),
        ("Index Scan", "exceptions_overdue_by_owner"),
    ], outline
