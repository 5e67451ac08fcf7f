"""Prints the catalogue snapshot of a freshly migrated database: columns, domains, indexes.

    python -m tests.migrations.dump_schema > tests/migrations/expected_schema.txt

Uses TEST_DATABASE_URL, or an embedded server, exactly as the tests do.
"""

from __future__ import annotations

import asyncio

import asyncpg

from server.store.migrate import apply_migrations
from tests import pg

COLUMNS = """
SELECT table_name, column_name, data_type, udt_name, domain_name, is_nullable
FROM information_schema.columns
WHERE table_schema = 'public'
"""

# The domains of the schema and their constraints: a column's line names its domain, and
# what the domain checks is here.
DOMAINS = """
SELECT t.typname, format_type(t.typbasetype, t.typtypmod) AS base, t.typnotnull,
       c.conname, pg_get_constraintdef(c.oid) AS definition
FROM pg_type AS t
LEFT JOIN pg_constraint AS c ON c.contypid = t.oid
WHERE t.typtype = 'd' AND t.typnamespace = 'public'::regnamespace
"""

INDEXES = """
SELECT tablename, indexname, indexdef
FROM pg_indexes
WHERE schemaname = 'public'
"""


async def schema_lines(conn: asyncpg.Connection) -> list[str]:
    columns = [
        f"column {r['table_name']}.{r['column_name']} {r['data_type']}"
        # For arrays, data_type says only ARRAY; udt_name says of what.
        f"{' ' + r['udt_name'] if r['data_type'] == 'ARRAY' else ''}"
        f"{' domain ' + r['domain_name'] if r['domain_name'] else ''}"
        f"{'' if r['is_nullable'] == 'YES' else ' NOT NULL'}"
        for r in await conn.fetch(COLUMNS)
    ]
    domains = [
        " ".join(
            part
            for part in (
                f"domain {r['typname']} {r['base']}",
                "NOT NULL" if r["typnotnull"] else "",
                r["conname"] or "",
                r["definition"] or "",
            )
            if part
        )
        for r in await conn.fetch(DOMAINS)
    ]
    indexes = [
        f"index {r['tablename']}.{r['indexname']} {r['indexdef']}"
        for r in await conn.fetch(INDEXES)
    ]
    return sorted(columns + domains + indexes)


def render(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


async def migrated_schema(server: str) -> str:
    name = await pg.create_empty_database(server, "casework_schema")
    try:
        conn = await asyncpg.connect(pg.owner_dsn(server, name))
        try:
            await apply_migrations(conn, pg.MIGRATIONS_DIR)
            return render(await schema_lines(conn))
        finally:
            await conn.close()
    finally:
        await pg.drop_database(server, name)


def main() -> None:
    print(asyncio.run(migrated_schema(pg.server_dsn())), end="")


if __name__ == "__main__":
    main()
