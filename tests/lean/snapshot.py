"""The database put back as it was, between the two requests of a pair.

A mutation run on one path changes what the other would answer (the next claim gets
another item). So every table's rows, and every sequence's position, are copied once into
a schema of their own, and copied back before each request of a mutation's pair. With the
sequences put back too, the second execution makes the same ids as the first; only random
values and the clock differ (tests/lean/wire.py compares those by shape).

As the database's owner, with session_replication_role=replica: no trigger fires (the
append-only guards, the events' NOTIFYs) and no foreign key is checked while rows go back.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

SCHEMA = "lean_snapshot"
# Written by migrations only.
UNTOUCHED = frozenset({"schema_migrations"})


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Snapshot:
    conn: asyncpg.Connection
    restore_sql: str = ""

    async def take(self) -> None:
        tables = [
            row["relname"]
            for row in await self.conn.fetch(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname"
            )
            if row["relname"] not in UNTOUCHED
        ]
        statements = ["SET LOCAL session_replication_role = replica"]
        copies = [f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE", f"CREATE SCHEMA {SCHEMA}"]
        for table in tables:
            columns = ", ".join(
                _quoted(row["attname"])
                for row in await self.conn.fetch(
                    "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass"
                    " AND attnum > 0 AND NOT attisdropped AND attgenerated = ''"
                    " ORDER BY attnum",
                    f"public.{_quoted(table)}",
                )
            )
            live, kept = f"public.{_quoted(table)}", f"{SCHEMA}.{_quoted(table)}"
            copies.append(f"CREATE TABLE {kept} AS SELECT {columns} FROM {live}")
            statements.append(f"DELETE FROM {live}")
            statements.append(
                f"INSERT INTO {live} ({columns}) OVERRIDING SYSTEM VALUE"
                f" SELECT {columns} FROM {kept}"
            )
        for row in await self.conn.fetch(
            "SELECT schemaname, sequencename, last_value FROM pg_sequences"
            " WHERE schemaname = 'public'"
        ):
            name = f"public.{_quoted(row['sequencename'])}"
            if row["last_value"] is None:
                statements.append(f"SELECT setval('{name}', 1, false)")
            else:
                statements.append(f"SELECT setval('{name}', {row['last_value']}, true)")
        await self.conn.execute(";\n".join(copies))
        self.restore_sql = ";\n".join(statements)

    async def restore(self) -> None:
        assert self.restore_sql, "take() first"
        async with self.conn.transaction():
            await self.conn.execute(self.restore_sql)
