"""The peers bench's yardstick (bench/peers/review_queue.sql) fences as Casework does: a
decision under a stale or foreign lease writes nothing, and each write sends its hint.
A yardstick that skipped its fence would flatter the peers it stands for."""

from __future__ import annotations

import asyncio
import json
import uuid

import asyncpg

from server.config import REPO_ROOT
from tests.conftest import TestDatabase

SCHEMA_SQL = REPO_ROOT / "bench" / "peers" / "review_queue.sql"
HINT_WAIT_SECONDS = 10


async def with_items(conn: asyncpg.Connection, count: int) -> None:
    await conn.execute(SCHEMA_SQL.read_text())
    await conn.executemany(
        "INSERT INTO peer.items (queue, priority, payload) VALUES ('bench', 0, '{}')",
        [() for _ in range(count)],
    )


async def claim(conn: asyncpg.Connection, actor: str) -> asyncpg.Record:
    row = await conn.fetchrow("SELECT * FROM peer.claim_next('bench', $1)", actor)
    assert row is not None
    return row


async def decide(conn: asyncpg.Connection, item_id: int, token: uuid.UUID, actor: str) -> bool:
    row = await conn.fetchrow(
        "SELECT id FROM peer.submit_decision($1, $2, 'approve', $3)", item_id, token, actor
    )
    return row is not None and row["id"] is not None


async def decisions(conn: asyncpg.Connection) -> int:
    count: int = await conn.fetchval("SELECT count(*) FROM peer.decisions")
    return count


async def test_a_stale_or_foreign_lease_decides_nothing(owner_conn: asyncpg.Connection) -> None:
    await with_items(owner_conn, 1)
    first = await claim(owner_conn, "ann")

    assert not await decide(owner_conn, first["id"], uuid.uuid4(), "ann")
    assert not await decide(owner_conn, first["id"], first["lease_token"], "bob")

    # The lease runs out; the next claim takes the item over under a new token.
    await owner_conn.execute(
        "UPDATE peer.items SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        first["id"],
    )
    assert not await decide(owner_conn, first["id"], first["lease_token"], "ann")
    second = await claim(owner_conn, "bob")
    assert (second["id"], second["lease_token"] != first["lease_token"]) == (first["id"], True)
    assert not await decide(owner_conn, first["id"], first["lease_token"], "ann")
    assert await decisions(owner_conn) == 0

    assert await decide(owner_conn, second["id"], second["lease_token"], "bob")
    assert not await decide(owner_conn, second["id"], second["lease_token"], "bob")
    assert await decisions(owner_conn) == 1
    assert (await claim(owner_conn, "ann"))["id"] is None


async def test_each_write_sends_one_hint_unless_the_connection_turns_them_off(
    owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    await with_items(owner_conn, 2)
    heard: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(test_database.owner_dsn)
    try:
        await listener.add_listener("casework_events", lambda *args: heard.put_nowait(args[3]))
        # Hints off first: had it sent one, that hint would be heard before the next ones.
        await owner_conn.execute("SET peer.hints = 'off'")
        quiet = await claim(owner_conn, "ann")
        assert await decide(owner_conn, quiet["id"], quiet["lease_token"], "ann")
        await owner_conn.execute("RESET peer.hints")
        loud = await claim(owner_conn, "ann")
        assert await decide(owner_conn, loud["id"], loud["lease_token"], "ann")

        async with asyncio.timeout(HINT_WAIT_SECONDS):
            got = [json.loads(await heard.get()) for _ in range(2)]
        assert [(hint["k"], hint["i"]) for hint in got] == [
            ("claimed", loud["id"]),
            ("decided", loud["id"]),
        ]
    finally:
        await listener.close()
