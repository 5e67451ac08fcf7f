"""The application role cannot rewrite history or mint tokens: PostgreSQL refuses, not our code."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.model import Decision
from server.store.database import Database
from tests.conftest import reviewer
from tests.integration.helpers import claim, decide, enqueue_one

INSUFFICIENT_PRIVILEGE = "42501"


@pytest.fixture
async def decision(db: Database, kyc_queue: str) -> Decision:
    await enqueue_one(db, kyc_queue, "cust-1")
    alice = reviewer("alice")
    return await decide(db, alice, await claim(db, alice))


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE review_decisions SET outcome = 'reject' WHERE id = $1",
        "DELETE FROM review_decisions WHERE id = $1",
        "TRUNCATE review_decisions",
        "INSERT INTO api_tokens (token_hash, user_name, role) "
        "VALUES (repeat('a', 64), 'mallory', 'admin')",
        # It may note a token's last use (migration 0010), and change nothing else of it.
        "UPDATE api_tokens SET revoked_at = NULL, expires_at = NULL, role = 'admin'",
    ],
    ids=["update", "delete", "truncate", "mint-token", "revive-token"],
)
async def test_application_role_is_refused(
    decision: Decision,
    app_conn: asyncpg.Connection,
    owner_conn: asyncpg.Connection,
    statement: str,
) -> None:
    args = [decision.id] if "$1" in statement else []

    with pytest.raises(asyncpg.InsufficientPrivilegeError) as refused:
        await app_conn.execute(statement, *args)

    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
    row = await owner_conn.fetchrow("SELECT * FROM review_decisions WHERE id = $1", decision.id)
    assert row is not None
    assert (row["outcome"], row["reviewer"]) == ("approve", "alice")
    assert await owner_conn.fetchval("SELECT count(*) FROM api_tokens") == 0


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE item_events SET actor = 'mallory'",
        "DELETE FROM item_events",
        "TRUNCATE item_events",
    ],
    ids=["update", "delete", "truncate"],
)
async def test_application_role_cannot_rewrite_the_timeline(
    decision: Decision,
    app_conn: asyncpg.Connection,
    owner_conn: asyncpg.Connection,
    statement: str,
) -> None:
    timeline = "SELECT kind, actor FROM item_events WHERE item_id = $1 ORDER BY id"
    before = [tuple(row) for row in await owner_conn.fetch(timeline, decision.item_id)]
    assert before == [("enqueued", "kyc-provider")]
    # It may add to the timeline, and nothing else.
    await app_conn.execute(
        "INSERT INTO item_events (item_id, queue, kind, actor, actor_role, body) "
        "VALUES ($1, 'kyc', 'noted', 'alice', 'reviewer', 'Fine.')",
        decision.item_id,
    )

    with pytest.raises(asyncpg.InsufficientPrivilegeError) as refused:
        await app_conn.execute(statement)

    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
    after = [tuple(row) for row in await owner_conn.fetch(timeline, decision.item_id)]
    assert after == [*before, ("noted", "alice")]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE qa_results SET agrees = NOT agrees",
        "DELETE FROM qa_results",
        "TRUNCATE qa_results",
    ],
    ids=["update", "delete", "truncate"],
)
async def test_application_role_cannot_rewrite_a_qa_result(
    decision: Decision,
    app_conn: asyncpg.Connection,
    owner_conn: asyncpg.Connection,
    statement: str,
) -> None:
    # A QA result as qa_result_record writes it (migration 0021), inserted by the service's
    # own role: it may add results, and nothing else.
    await owner_conn.execute(
        "INSERT INTO queues (name) VALUES ('kyc-qa');"
        "INSERT INTO reason_codes (queue, code, label, verdicts) "
        "VALUES ('kyc-qa', 'qa_agree', 'agree', ARRAY['approve'])"
    )
    copy_id = await app_conn.fetchval(
        "INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash, "
        "kind, barred_claimer, qa_of) VALUES ('kyc-qa', 'kyc-qa', 'qa-of-decision-' || $1::bigint, "
        "'{}', $2, 'qa', 'alice', $1::bigint) RETURNING id",
        decision.id,
        decision.evidence_hash,
    )
    await app_conn.execute(
        "INSERT INTO qa_results (decision_id, qa_item_id, queue, decision_queue, agrees, "
        "reason_code, reviewer, reviewer_role, lease_token) "
        "VALUES ($1, $2, 'kyc-qa', 'kyc', true, 'qa_agree', 'bob', 'reviewer', gen_random_uuid())",
        decision.id,
        copy_id,
    )

    with pytest.raises(asyncpg.InsufficientPrivilegeError) as refused:
        await app_conn.execute(statement)

    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
    rows = await owner_conn.fetch("SELECT decision_id, agrees, reviewer FROM qa_results")
    assert [tuple(row) for row in rows] == [(decision.id, True, "bob")]
