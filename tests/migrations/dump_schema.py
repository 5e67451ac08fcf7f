"""Prints the catalogue snapshot of a freshly migrated database: columns and indexes.

    python -m tests.migrations.dump_schema > tests/migrations/expected_schema.txt

Uses TEST_DATABASE_URL, or an embedded server, exactly as the tests do.
"""

from __future__ import annotations

import asyncio

import asyncpg

from server.store.migrate import apply_migrations
from tests import pg

COLUMNS = """
SELECT table_name, column_name, data_type, udt_name, is_nullable
FROM information_schema.columns
WHERE table_schema = 'public'
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
        f"{'' if r['is_nullable'] == 'YES' else ' NOT NULL'}"
        for r in await conn.fetch(COLUMNS)
    ]
    indexes = [
        f"index {r['tablename']}.{r['indexname']} {r['indexdef']}"
        for r in await conn.fetch(INDEXES)
    ]
    return sorted(columns + indexes)


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
