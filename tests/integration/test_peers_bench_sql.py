"""The peers bench's yardsticks (bench/peers/review_queue.sql's functions, and the plain
statements of plain+notify) fence as Casework does: a decision under a stale or foreign
lease writes nothing, and each write sends its hint. A yardstick that skipped its fence
would flatter the peers it stands for."""

from __future__ import annotations

import asyncio
import json
import uuid

import asyncpg

from server.config import REPO_ROOT
from tests.conftest import TestDatabase

PEERS = REPO_ROOT / "bench" / "peers"
SCHEMA_SQL = PEERS / "review_queue.sql"
PLAIN_CLAIM = (PEERS / "plain_claim.sql").read_text()
PLAIN_DECIDE = (PEERS / "plain_decide.sql").read_text()
CHANNEL = "casework_events"
# What peer_plain.py sends as the hints' heads; the statements append the ids.
CLAIMED_HEAD = '{"k":"claimed","q":"bench","from":"bench","i":'
DECIDED_HEAD = '{"k":"decided","q":"bench","from":"bench","i":'
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


async def plain_claim(conn: asyncpg.Connection, actor: str) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await conn.fetchrow(
        PLAIN_CLAIM, "bench", actor, CHANNEL, CLAIMED_HEAD
    )
    return row


async def plain_decide(
    conn: asyncpg.Connection, item_id: int, token: uuid.UUID, actor: str
) -> int | None:
    row = await conn.fetchrow(PLAIN_DECIDE, item_id, token, "approve", actor, CHANNEL, DECIDED_HEAD)
    return None if row is None else int(row["id"])


async def test_the_plain_statements_fence_as_the_functions_do(
    owner_conn: asyncpg.Connection,
) -> None:
    await with_items(owner_conn, 1)
    first = await plain_claim(owner_conn, "ann")
    assert first is not None

    assert await plain_decide(owner_conn, first["id"], uuid.uuid4(), "ann") is None
    assert await plain_decide(owner_conn, first["id"], first["lease_token"], "bob") is None

    await owner_conn.execute(
        "UPDATE peer.items SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        first["id"],
    )
    assert await plain_decide(owner_conn, first["id"], first["lease_token"], "ann") is None
    second = await plain_claim(owner_conn, "bob")
    assert second is not None
    assert (second["id"], second["lease_token"] != first["lease_token"]) == (first["id"], True)
    assert await decisions(owner_conn) == 0

    assert await plain_decide(owner_conn, second["id"], second["lease_token"], "bob") is not None
    assert await plain_decide(owner_conn, second["id"], second["lease_token"], "bob") is None
    assert await decisions(owner_conn) == 1
    assert await plain_claim(owner_conn, "ann") is None


async def test_each_plain_statement_sends_one_hint_with_caseworks_keys(
    owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    await with_items(owner_conn, 1)
    heard: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(test_database.owner_dsn)
    try:
        await listener.add_listener(CHANNEL, lambda *args: heard.put_nowait(args[3]))
        claimed = await plain_claim(owner_conn, "ann")
        assert claimed is not None
        decision = await plain_decide(owner_conn, claimed["id"], claimed["lease_token"], "ann")

        async with asyncio.timeout(HINT_WAIT_SECONDS):
            got = [json.loads(await heard.get()) for _ in range(2)]
        item = claimed["id"]
        assert got == [
            {"k": "claimed", "q": "bench", "from": "bench", "i": item},
            {"k": "decided", "q": "bench", "from": "bench", "i": item, "d": decision},
        ]
        assert heard.empty()
    finally:
        await listener.close()


async def test_the_open_functions_take_the_actor_as_an_argument(
    owner_conn: asyncpg.Connection,
) -> None:
    """postgraphile-nojwt's schema: the same functions, the actor named by the caller; no
    actor, no claim (STRICT), as a request without a verified subject gets none."""
    await with_items(owner_conn, 1)
    assert await owner_conn.fetchval("SELECT id FROM peer_open.claim_next('bench', NULL)") is None
    claimed = await owner_conn.fetchrow("SELECT * FROM peer_open.claim_next('bench', 'ann')")
    assert claimed is not None
    item, token = claimed["id"], claimed["lease_token"]
    decide_as = "SELECT id FROM peer_open.submit_decision($1, $2, 'approve', $3)"

    assert await owner_conn.fetchval(decide_as, item, token, "bob") is None
    assert await owner_conn.fetchval(decide_as, item, token, "ann") is not None
    assert await decisions(owner_conn) == 1
