"""The one-column CHECKs that migration 0018 moved into domains refuse what the table CHECKs
refused, under the domain's constraint name, and let NULL through where the column allows it;
the application role writes and reads the columns as text."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import pytest

# A decided item has its decision time (a CHECK on two columns, still the table's).
ITEM = (
    "INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash, "
    "state, kind, decided_at) VALUES ('kyc', 'kyc', $1, '{}', $2, $3, $4, $5) "
    "RETURNING id, external_key, evidence_hash, state, kind"
)
GOOD_ITEM = ("cust-1", "0" * 64, "pending", "review", None)

DECISION = (
    "INSERT INTO review_decisions (item_id, queue, verdict, outcome, reason_code, note, "
    "reviewer, reviewer_role, evidence_hash, lease_token, traceparent) "
    "VALUES ($1, 'kyc', $2, $3, 'documents_ok', $4, 'alice', 'reviewer', $5, "
    "gen_random_uuid(), $6) RETURNING verdict, outcome, note, evidence_hash, traceparent"
)
GOOD_DECISION = ("approve", "approve", None, "0" * 64, None)


@pytest.mark.parametrize(
    ("column", "value", "constraint"),
    [
        ("external_key", "", "short_text_is_1_to_200_characters"),
        ("external_key", "k" * 201, "short_text_is_1_to_200_characters"),
        ("evidence_hash", "A" * 64, "sha256_hex_is_64_lowercase_hex_digits"),
        ("evidence_hash", "0" * 63, "sha256_hex_is_64_lowercase_hex_digits"),
        ("state", "closed", "review_item_state_is_known"),
        ("kind", "task", "review_item_kind_is_known"),
    ],
)
async def test_an_item_value_the_old_check_refused_is_refused_by_its_domain(
    kyc_queue: str, app_conn: asyncpg.Connection, column: str, value: str, constraint: str
) -> None:
    columns = ("external_key", "evidence_hash", "state", "kind", "decided_at")
    values = [
        value if name == column else good for name, good in zip(columns, GOOD_ITEM, strict=True)
    ]

    with pytest.raises(asyncpg.CheckViolationError) as refused:
        await app_conn.fetchrow(ITEM, *values)

    assert refused.value.constraint_name == constraint


@pytest.mark.parametrize(
    ("column", "value", "constraint"),
    [
        ("verdict", "maybe", "decision_verdict_is_known"),
        ("outcome", "overturn", "decision_outcome_is_known"),
        ("note", "n" * 4001, "note_text_is_at_most_4000_characters"),
        ("evidence_hash", "g" * 64, "sha256_hex_is_64_lowercase_hex_digits"),
        ("traceparent", "t" * 101, "traceparent_text_is_at_most_100_characters"),
    ],
)
async def test_a_decision_value_the_old_check_refused_is_refused_by_its_domain(
    kyc_queue: str, app_conn: asyncpg.Connection, column: str, value: str, constraint: str
) -> None:
    item = await app_conn.fetchval(ITEM, *GOOD_ITEM)
    columns = ("verdict", "outcome", "note", "evidence_hash", "traceparent")
    values = [
        value if name == column else good for name, good in zip(columns, GOOD_DECISION, strict=True)
    ]

    with pytest.raises(asyncpg.CheckViolationError) as refused:
        await app_conn.fetchrow(DECISION, item, *values)

    assert refused.value.constraint_name == constraint


async def test_the_values_the_checks_allowed_are_written_and_read_back_as_text(
    kyc_queue: str, app_conn: asyncpg.Connection
) -> None:
    decided_at = datetime.now(UTC)
    item = await app_conn.fetchrow(
        ITEM, "k" * 200, "0123456789abcdef" * 4, "decided", "exception", decided_at
    )
    assert item is not None
    item_id = item["id"]
    assert dict(item) == {
        "id": item_id,
        "external_key": "k" * 200,
        "evidence_hash": "0123456789abcdef" * 4,
        "state": "decided",
        "kind": "exception",
    }

    # NULL passes a domain's CHECK as it passed the table's: note and traceparent are optional.
    for note, traceparent in ((None, None), ("n" * 4000, "t" * 100)):
        decision = await app_conn.fetchrow(
            DECISION, item_id, "approve", "approve", note, "f" * 64, traceparent
        )
        assert decision is not None
        assert dict(decision) == {
            "verdict": "approve",
            "outcome": "approve",
            "note": note,
            "evidence_hash": "f" * 64,
            "traceparent": traceparent,
        }
        assert all(type(v) is str for v in decision.values() if v is not None)


async def test_not_null_stays_on_the_columns(kyc_queue: str, app_conn: asyncpg.Connection) -> None:
    with pytest.raises(asyncpg.NotNullViolationError):
        await app_conn.fetchrow(ITEM, "cust-1", None, "pending", "review", None)
