"""Plan regression at 1,000,000 items: every statement a common item or decision search runs
reads its rows through an index (never a Seq Scan of review_items, review_decisions or
item_events), under the plan PostgreSQL picks for the values (custom) and under the one a
pooled prepared statement may settle on (generic), and reads a bounded number of rows.

The statements are the ones the domain functions actually ran for the search (recorded by
RecordingDatabase), EXPLAINed with ANALYZE so that "rows read" is counted, not estimated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.model import DecisionStatus, ItemState, Verdict
from server.domain.search import filters
from server.domain.search.decisions import search_decisions
from server.domain.search.filters import (
    DecisionPage,
    DecisionSearch,
    ItemPage,
    ItemSearch,
    SearchOrder,
    SearchTooBroad,
)
from server.domain.search.items import search_items
from server.store.queries import Queries
from tests.conftest import ADMIN
from tests.migrations.helpers import plan_nodes, plan_outline
from tests.search.conftest import RecordingDatabase

# One worker builds the history (a session fixture is per worker).
pytestmark = pytest.mark.xdist_group("search_scale")

SCANNED = ("review_items", "review_decisions", "item_events")
NOW = datetime.now(UTC)
LAST_MONTH = NOW - timedelta(days=30)
LAST_QUARTER = NOW - timedelta(days=91)

ITEM_SEARCHES = {
    "one-queue": ItemSearch(queues=("search-05",)),
    "one-queue-oldest": ItemSearch(queues=("search-05",), order=SearchOrder.OLDEST_FIRST),
    "queues-pending": ItemSearch(queues=("search-00", "search-01"), states=(ItemState.PENDING,)),
    "pending-high-priority": ItemSearch(states=(ItemState.PENDING,), priority_at_least=10),
    "key": ItemSearch(external_key_prefix="app-731"),
    "key-exact": ItemSearch(external_key_prefix="app-999999"),
    "subject": ItemSearch(subject_ref="subj-4242"),
    "decider-last-month": ItemSearch(decided_by="rev-05", decided_after=LAST_MONTH),
    "decider-verdict-reason": ItemSearch(
        decided_by="rev-05", verdict=Verdict.REJECT, reason_code="name_mismatch"
    ),
    "reason-last-quarter": ItemSearch(
        queues=("search-03",), reason_code="fraud_signal", decided_after=LAST_QUARTER
    ),
    "verdict-last-week": ItemSearch(verdict=Verdict.REJECT, decided_after=NOW - timedelta(days=7)),
    "overturned-last-quarter": ItemSearch(overturned=True, decided_after=LAST_QUARTER),
    "provisional": ItemSearch(decision_status=DecisionStatus.PROVISIONAL),
    "enqueued-one-day": ItemSearch(
        enqueued_after=NOW - timedelta(days=100), enqueued_before=NOW - timedelta(days=99)
    ),
    "assigned": ItemSearch(assigned_to="rev-10"),
    "held": ItemSearch(held=True),
    "overdue": ItemSearch(overdue=True, queues=("search-02",)),
    "leased": ItemSearch(states=(ItemState.LEASED,)),
    "parked": ItemSearch(states=(ItemState.PARKED,)),
    "notes-in-queue": ItemSearch(has_notes=True, queues=("search-12",)),
}

DECISION_SEARCHES = {
    "one-queue": DecisionSearch(queues=("search-05",)),
    "all-queues": DecisionSearch(),
    "reviewer": DecisionSearch(reviewer="rev-05"),
    "reviewer-last-quarter": DecisionSearch(reviewer="rev-05", decided_after=LAST_QUARTER),
    "reason-verdict": DecisionSearch(reason_code="name_mismatch", verdict=Verdict.REJECT),
    "verdict-queue": DecisionSearch(queues=("search-00",), verdict=Verdict.REJECT),
    "superseded": DecisionSearch(status=DecisionStatus.SUPERSEDED),
    "provisional": DecisionSearch(status=DecisionStatus.PROVISIONAL),
    "oldest-first": DecisionSearch(queues=("search-07",), order=SearchOrder.OLDEST_FIRST),
}


def rows_read(explained: Any) -> dict[str, int]:
    """Rows each scanned table gave up, kept or filtered out, over every loop (EXPLAIN
    ANALYZE's figures): what the statement read, not what it returned."""
    document = json.loads(explained) if isinstance(explained, str) else explained
    read = dict.fromkeys(SCANNED, 0)
    for node in plan_nodes(document[0]["Plan"]):
        table = node.get("Relation Name")
        if table in read:
            per_loop = (
                node.get("Actual Rows", 0)
                + node.get("Rows Removed by Filter", 0)
                + node.get("Rows Removed by Index Recheck", 0)
            )
            read[table] += int(per_loop * node.get("Actual Loops", 1))
    return read


async def explain(
    conn: asyncpg.Connection,
    queries: Queries,
    name: str,
    arguments: dict[str, Any],
    *,
    generic: bool,
) -> Any:
    """EXPLAIN ANALYZE of one named statement with the arguments a search gave it."""
    statement = queries.statement(name)
    values = statement.bind(arguments)
    if not generic:
        return await conn.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement.sql, *values, column=0
        )
    # A pool reuses prepared statements: the generic plan may be the one that runs. The
    # arguments go in as literals of the parameters' own types, as PostgreSQL spells them.
    oids = [parameter.oid for parameter in (await conn.prepare(statement.sql)).get_parameters()]
    types = [await conn.fetchval("SELECT format_type($1::oid, NULL)", oid) for oid in oids]
    literals = [
        await conn.fetchval(f"SELECT quote_nullable($1::{type_})", value)
        for value, type_ in zip(values, types, strict=True)
    ]
    declared = f" ({', '.join(types)})" if types else ""
    await conn.execute(f"PREPARE searched{declared} AS {statement.sql}")
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        arguments_sql = ", ".join(
            f"{literal}::{type_}" for literal, type_ in zip(literals, types, strict=True)
        )
        executed = f"EXECUTE searched ({arguments_sql})" if types else "EXECUTE searched"
        return await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {executed}")
    finally:
        await conn.execute("RESET plan_cache_mode")
        await conn.execute("DEALLOCATE searched")


async def assert_served_by_indexes(
    conn: asyncpg.Connection, queries: Queries, db: RecordingDatabase, *, generic: bool
) -> None:
    assert db.ran, "the search ran no statement"
    for name, arguments in db.ran:
        explained = await explain(conn, queries, name, arguments, generic=generic)
        outline = plan_outline(explained)
        for table in SCANNED:
            assert ("Seq Scan", table) not in outline, (name, outline)
        read = rows_read(explained)
        # One statement reads at most the scan limit's worth of each table (the limit + 1
        # tells a search that reached it), whatever the history holds.
        assert max(read.values()) <= filters.SCAN_LIMIT + 1, (name, read, outline)


@pytest.mark.parametrize("plan", ["custom", "generic"])
@pytest.mark.parametrize("search", list(ITEM_SEARCHES.values()), ids=list(ITEM_SEARCHES))
async def test_item_searches_read_through_indexes(
    scale_db: RecordingDatabase,
    scale_owner: asyncpg.Connection,
    queries: Queries,
    search: ItemSearch,
    plan: str,
) -> None:
    result = await search_items(scale_db, ADMIN, search, 50, None)

    assert isinstance(result, ItemPage), result
    await assert_served_by_indexes(scale_owner, queries, scale_db, generic=plan == "generic")


@pytest.mark.parametrize("plan", ["custom", "generic"])
@pytest.mark.parametrize("search", list(DECISION_SEARCHES.values()), ids=list(DECISION_SEARCHES))
async def test_decision_searches_read_through_indexes(
    scale_db: RecordingDatabase,
    scale_owner: asyncpg.Connection,
    queries: Queries,
    search: DecisionSearch,
    plan: str,
) -> None:
    result = await search_decisions(scale_db, ADMIN, search, 50, None)

    assert isinstance(result, DecisionPage | SearchTooBroad), result
    await assert_served_by_indexes(scale_owner, queries, scale_db, generic=plan == "generic")


async def test_a_too_broad_search_is_refused_having_read_at_most_the_limit(
    scale_db: RecordingDatabase, scale_owner: asyncpg.Connection, queries: Queries
) -> None:
    # Approvals of a year in the busiest queue (about 100,000 at 1M) of which few are urgent:
    # the short walk of the activity order finds too few, and the verdict's index has more
    # than the limit to give.
    search = ItemSearch(queues=("search-00",), verdict=Verdict.APPROVE, priority_at_least=100)

    result = await search_items(scale_db, ADMIN, search, 50, None)

    assert isinstance(result, SearchTooBroad), result
    assert "decidedAfter" in result.narrow_by, result
    # Refused by construction: each statement it ran stopped at the limit (+1, which tells
    # the search it reached it); none read the approvals through.
    for name, arguments in scale_db.ran:
        read = rows_read(await explain(scale_owner, queries, name, arguments, generic=False))
        assert sum(read.values()) <= filters.SCAN_LIMIT + 1, (name, read)


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_superseded_decisions_over_all_history_read_a_page_per_queue(
    scale_db: RecordingDatabase, scale_owner: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    """Superseded decisions are found through the rows that name them, and those rows hold
    the named decision's time: each queue's walk stops at a page, over ten years of history."""
    result = await search_decisions(
        scale_db, ADMIN, DecisionSearch(status=DecisionStatus.SUPERSEDED), 50, None
    )

    assert isinstance(result, DecisionPage), result
    assert len(result.decisions) == 50
    assert all(d.status is DecisionStatus.SUPERSEDED for d in result.decisions)
    times = [d.decided_at for d in result.decisions]
    assert times == sorted(times, reverse=True)
    ((name, arguments),) = [ran for ran in scale_db.ran if ran[0].startswith("decisions_search")]
    explained = await explain(scale_owner, queries, name, arguments, generic=plan == "generic")
    queues = len(arguments["queues"])
    # Per queue, a page and the row that tells there is more; with no filter on the
    # decisions themselves, none is probed.
    assert rows_read(explained)["review_decisions"] <= queues * (50 + 1), plan_outline(explained)
