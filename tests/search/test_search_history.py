"""The history the scale tests and bench search (bench/search_history.py) is a valid one: its
rows pass every foreign key PostgreSQL would have checked had the load not switched the checks
off, and it holds every kind of row a search filters on."""

from __future__ import annotations

import asyncpg

from tests.search.conftest import RECENT_ITEMS, STALE_PENDING, build_history

# Each foreign key of the loaded tables, dropped and added again: adding one checks every row.
RECHECK_FOREIGN_KEYS = """
DO $$
DECLARE c record;
BEGIN
    FOR c IN
        SELECT conname, conrelid::regclass AS t, pg_get_constraintdef(oid) AS definition
        FROM pg_constraint
        WHERE contype = 'f'
          AND conrelid::regclass::text IN
              ('review_items', 'review_decisions', 'item_events', 'exceptions')
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.t, c.conname);
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.t, c.conname, c.definition);
    END LOOP;
END $$
"""

MIX = """
SELECT count(DISTINCT queue) AS queues,
       count(*) FILTER (WHERE state = 'decided') AS decided,
       count(*) FILTER (WHERE state = 'pending' AND lease_token IS NULL) AS pending,
       count(*) FILTER (WHERE lease_token IS NOT NULL) AS leased,
       count(*) FILTER (WHERE state = 'parked') AS parked,
       count(*) FILTER (WHERE held_until IS NOT NULL) AS held,
       count(*) FILTER (WHERE assigned_to IS NOT NULL) AS assigned,
       count(*) FILTER (WHERE state = 'pending' AND due_at <= now()) AS overdue,
       count(*) FILTER (WHERE awaiting_decision_id IS NOT NULL) AS awaiting,
       count(*) FILTER (WHERE subject_ref IS NOT NULL) AS with_subject,
       (SELECT count(*) FROM review_decisions WHERE verdict = 'overturn') AS overturns,
       (SELECT count(*) FROM review_decisions WHERE verdict = 'escalate') AS escalations,
       (SELECT count(*) FROM review_decisions WHERE provisional) AS provisional,
       (SELECT count(DISTINCT reviewer) FROM review_decisions) AS reviewers,
       (SELECT count(*) FROM item_events WHERE kind = 'noted') AS notes,
       (SELECT count(*) FROM exceptions) AS exceptions
FROM review_items
"""


async def test_the_history_is_valid_and_holds_every_kind_of_row(
    owner_conn: asyncpg.Connection,
) -> None:
    await build_history(owner_conn, 20_000)

    async with owner_conn.transaction():
        await owner_conn.execute(RECHECK_FOREIGN_KEYS)
    mix = await owner_conn.fetchrow(MIX)
    assert mix is not None
    assert mix["queues"] == 50, dict(mix)
    # All but the live work: about a week's items and a few hundred stale ones still wait.
    assert 20_000 - RECENT_ITEMS - STALE_PENDING < mix["decided"] < 20_000, dict(mix)
    assert mix["awaiting"] == mix["provisional"], dict(mix)
    assert mix["reviewers"] >= 60, dict(mix)
    assert min(dict(mix).values()) > 0, dict(mix)
    # New rows after the load get fresh ids (the load set them itself).
    assert await owner_conn.fetchval(
        "SELECT nextval(pg_get_serial_sequence('review_decisions', 'id')) > max(id) "
        "FROM review_decisions"
    )
