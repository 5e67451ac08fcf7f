"""Named parameters: translated once at load, checked by name at every call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from server.config import REPO_ROOT
from server.store import sql, sqlgen
from server.store.database import Database
from server.store.queries import Queries, Query, QueryArguments, parse_queries, translate
from tests.conftest import TestDatabase
from tests.pg import QUERIES_DIR


def test_each_name_is_one_number_in_order_of_first_appearance() -> None:
    assert translate("SELECT :b, :a, :b + 1, :a_b") == (
        "SELECT $1, $2, $1 + 1, $3",
        ("b", "a", "a_b"),
    )


def test_a_cast_after_a_parameter_is_a_cast() -> None:
    assert translate("WHERE x = ANY (:names::text[]) AND y::int = :n::bigint") == (
        "WHERE x = ANY ($1::text[]) AND y::int = $2::bigint",
        ("names", "n"),
    )


def test_assignment_slices_strings_identifiers_and_comments_are_not_parameters() -> None:
    text = """\
SELECT f(a := 1), arr[1:100], ':not', 'it''s :not', "col:not", $$ :not $$, $t$ :not $t$
-- :not in a comment
/* :not either */
FROM t WHERE t.x = :yes"""

    translated, names = translate(text)

    assert names == ("yes",)
    assert translated == text.replace(":yes", "$1")


def test_a_positional_parameter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"x\.sql: q: positional parameter"):
        parse_queries("-- name: q\nSELECT $1;\n", "x.sql")


def test_the_project_queries_speak_only_names() -> None:
    queries = Queries(QUERIES_DIR)
    claim = queries.statement("item_claim_next")

    assert set(claim.parameters) == {"queue", "actor", "actor_role"}
    assert queries["item_claim_next"] == claim.sql
    assert ":queue" not in claim.sql


@pytest.fixture
async def closed_database(test_database: TestDatabase, queries: Queries) -> Database:
    # Any round trip on a closed connection raises InterfaceError; so an error of ours
    # proves the call failed before reaching the database.
    conn = await asyncpg.connect(test_database.app_dsn)
    await conn.close()
    return Database(conn, queries)


async def test_a_missing_name_fails_before_any_round_trip(closed_database: Database) -> None:
    with pytest.raises(QueryArguments, match=r"'item_claim_next'.*missing actor_role"):
        await closed_database.fetchrow(  # type: ignore[call-arg]
            sql.items.ITEM_CLAIM_NEXT, queue="kyc", actor="rita"
        )


async def test_an_unknown_name_fails_before_any_round_trip(closed_database: Database) -> None:
    with pytest.raises(QueryArguments, match=r"'lease_renew'.*unknown lease_owner"):
        await closed_database.fetch(  # type: ignore[call-arg]
            sql.leases.LEASE_RENEW,
            item_id=1,
            lease_token=None,
            actor="rita",
            queue_scope=None,
            lease_owner="rita",
        )


async def test_positional_arguments_are_refused(closed_database: Database) -> None:
    with pytest.raises(QueryArguments, match="'health_check' takes its parameters by name"):
        await closed_database.fetchrow(sql.health.HEALTH_CHECK, 1)  # type: ignore[call-arg]


def _probe(*, a: Any, b: Any) -> None: ...


async def test_each_value_reaches_its_name(test_database: TestDatabase, tmp_path: Path) -> None:
    (tmp_path / "probe.sql").write_text(
        "-- name: probe_order\nSELECT :b::text AS b, :a::int AS a, :b::text || '!' AS again;\n"
    )
    conn = await asyncpg.connect(test_database.app_dsn)
    try:
        db = Database(conn, Queries(tmp_path))
        row = await db.fetchrow(Query("probe_order", _probe), a=1, b="x")
    finally:
        await conn.close()

    assert row is not None
    assert dict(row) == {"b": "x", "a": 1, "again": "x!"}


def test_the_generated_modules_are_fresh() -> None:
    assert sqlgen.stale() == [], "run: python -m server.store.sqlgen"


def test_every_statement_has_its_symbol() -> None:
    queries = Queries(QUERIES_DIR)
    symbols = {
        query.name
        for module in sql.__all__
        for query in vars(getattr(sql, module)).values()
        if isinstance(query, Query)
    }

    assert symbols == set(queries.names())


# Checked by mypy, never run: a right call, then a misspelt, a missing and an extra name.
_CALLS = """\
from server.store import sql
from server.store.database import Database


async def calls(db: Database) -> None:
    await db.fetch(sql.items.ITEM_CLAIM_NEXT, queue="kyc", actor="rita", actor_role="reviewer")
    await db.fetch(sql.items.ITEM_CLAIM_NEXT, queue="kyc", actor="rita", actor_rol="reviewer")
    await db.fetch(sql.items.ITEM_CLAIM_NEXT, queue="kyc", actor="rita")
    await db.fetchrow(sql.health.HEALTH_CHECK, queue="kyc")
"""


def test_mypy_refuses_a_misspelt_missing_or_extra_name(tmp_path: Path) -> None:
    # What the generated symbols' signatures are for: a call's names are checked statically.
    calls = tmp_path / "calls.py"
    calls.write_text(_CALLS)
    mypy = [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml"]
    checked = subprocess.run(
        [*mypy, "--cache-dir", str(tmp_path / "cache"), str(calls)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )

    errors = [
        line.split(": error: ") for line in checked.stdout.splitlines() if ": error: " in line
    ]
    assert [(where.rpartition(":")[2], what) for where, what in errors] == [
        (
            "7",
            'Unexpected keyword argument "actor_rol" for "fetch" of "Database"; '
            'did you mean "actor_role"?  [call-arg]',
        ),
        ("8", 'Missing named argument "actor_role" for "fetch" of "Database"  [call-arg]'),
        ("9", 'Unexpected keyword argument "queue" for "fetchrow" of "Database"  [call-arg]'),
    ], checked.stdout + checked.stderr
