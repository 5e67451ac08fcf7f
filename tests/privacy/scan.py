"""Where canary values are stored: every text, json, jsonb and bytea column (domains over
them and arrays of them included) of every table of the database, found through the
catalogue, so that a table added later is searched without being named here."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

# Base types searched: a text-like value holds a canary as text, a bytea as its UTF-8 bytes.
TEXT_TYPES = ("text", "varchar", "bpchar", "json", "jsonb", "name", "citext")
BYTE_TYPES = ("bytea",)

# Every column of every ordinary or partitioned table outside the system schemas, with the
# base type it stores (through domains; an array's element type, marked as an array).
COLUMNS = """
WITH RECURSIVE cols AS (
    SELECT n.nspname AS schema, c.relname AS table_name, a.attname AS column_name,
           a.atttypid AS type_id, false AS is_array
    FROM pg_catalog.pg_attribute AS a
    JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p')
      AND a.attnum > 0 AND NOT a.attisdropped
      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg\\_%'
),
resolved (schema, table_name, column_name, type_id, is_array, depth) AS (
    SELECT schema, table_name, column_name, type_id, is_array, 0 FROM cols
    UNION ALL
    SELECT r.schema, r.table_name, r.column_name,
           CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.typelem END,
           r.is_array OR t.typtype <> 'd', r.depth + 1
    FROM resolved AS r
    JOIN pg_catalog.pg_type AS t ON t.oid = r.type_id
    WHERE (t.typtype = 'd' OR (t.typelem <> 0 AND t.typcategory = 'A')) AND r.depth < 8
)
SELECT DISTINCT ON (r.schema, r.table_name, r.column_name)
       r.schema, r.table_name, r.column_name, t.typname AS base_type, r.is_array
FROM resolved AS r
JOIN pg_catalog.pg_type AS t ON t.oid = r.type_id
ORDER BY r.schema, r.table_name, r.column_name, r.depth DESC
"""


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def searched_columns(
    owner_conn: asyncpg.Connection,
) -> list[tuple[str, str, str, str, bool]]:
    """(schema, table, column, base type, is an array) of every column `find_canaries`
    searches."""
    rows = await owner_conn.fetch(COLUMNS)
    return [
        (row["schema"], row["table_name"], row["column_name"], row["base_type"], row["is_array"])
        for row in rows
        if row["base_type"] in TEXT_TYPES + BYTE_TYPES
    ]


async def find_canaries(owner_conn: asyncpg.Connection, canaries: Iterable[str]) -> list[str]:
    """`table.column` (schema-qualified outside `public`) of every column holding any of the
    canaries anywhere in any row, sorted; empty: none is stored anywhere. Run it as the
    database owner, who reads every table."""
    wanted = sorted(set(canaries))
    assert wanted, "search for at least one canary"
    assert all(wanted), "a canary is never empty"
    hits: list[str] = []
    for schema, table, column, base_type, is_array in await searched_columns(owner_conn):
        target = f"{_identifier(schema)}.{_identifier(table)}"
        value = f"t.{_identifier(column)}"
        if base_type not in BYTE_TYPES:
            test = f"strpos({value}::text, c) > 0"
        elif is_array:
            # An array of bytea as text holds each element as hexadecimal.
            test = f"strpos({value}::text, encode(convert_to(c, 'UTF8'), 'hex')) > 0"
        else:
            test = f"position(convert_to(c, 'UTF8') IN {value}) > 0"
        found = await owner_conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM {target} AS t, unnest($1::text[]) AS c WHERE {test})",
            wanted,
        )
        if found:
            hits.append(f"{table}.{column}" if schema == "public" else f"{schema}.{table}.{column}")
    return sorted(hits)
