"""The kinds item_events may hold (migration 0012's CHECK) are TimelineKind's STORED_KINDS:
the kinds the timeline reads from other records can never be written there."""

from __future__ import annotations

import re

import asyncpg
import pytest

from server.domain.timeline.events import STORED_KINDS, TimelineKind
from server.store.database import Database

KIND_CHECK = """
SELECT pg_get_constraintdef(c.oid)
FROM pg_constraint AS c
WHERE c.conrelid = 'item_events'::regclass AND c.conname = 'item_events_kind'
"""
_LITERAL = re.compile(r"'([a-z_]+)'::text")


async def test_the_check_allows_exactly_the_stored_kinds(owner_conn: asyncpg.Connection) -> None:
    definition = await owner_conn.fetchval(KIND_CHECK)

    assert definition is not None, "item_events_kind is gone"
    assert set(_LITERAL.findall(definition)) == {kind.value for kind in STORED_KINDS}


@pytest.mark.parametrize("kind", list(TimelineKind), ids=str)
async def test_each_kind_is_stored_or_refused_as_its_enum_says(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, kind: TimelineKind
) -> None:
    item_id = await owner_conn.fetchval(
        "INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash) "
        "VALUES ('kyc', 'kyc', 'cust-1', '{}', repeat('0', 64)) RETURNING id"
    )
    insert = (
        "INSERT INTO item_events (item_id, queue, kind, actor, actor_role) "
        "VALUES ($1, 'kyc', $2, 'alice', 'reviewer')"
    )

    if kind in STORED_KINDS:
        await owner_conn.execute(insert, item_id, kind.value)
    else:
        with pytest.raises(asyncpg.CheckViolationError):
            await owner_conn.execute(insert, item_id, kind.value)
