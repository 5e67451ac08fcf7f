"""decision_events across restarts, against real `casework serve` processes: the service
stops while the stream is open, decisions are made while the client cannot reach it (through
another process), the service comes back at the same address, and the stream resumes from
its saved cursor with every decision once, in order. Then the consumer's own process
"restarts" (a new task and cursor store on the same file), once after a handler that
failed: that decision comes again, which is the at-least-once promise."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from casework_client import CaseworkClient, DecisionFields, FileCursorStore

from server.store.database import Database
from tests.api.live_server import free_ports
from tests.clients.conftest import WAIT_SECONDS, decide_next, serve_on
from tests.conftest import TestDatabase
from tests.live.helpers import Api, create_live_tokens, serve_env

ITEMS = 18
STREAM = "decisionEvents:kyc"


class HandlerFailed(Exception):
    pass


class Seen:
    """What a handler was given, in order, with a queue to await each arrival."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.arrivals: asyncio.Queue[str] = asyncio.Queue()

    def handler(self, fail_on: str | None = None) -> Callable[[DecisionFields], Awaitable[None]]:
        async def handle(decision: DecisionFields) -> None:
            self.ids.append(decision.id)
            self.arrivals.put_nowait(decision.id)
            if decision.id == fail_on:
                raise HandlerFailed(decision.id)

        return handle

    async def expect(self, ids: list[str]) -> None:
        """The next arrivals are exactly `ids`, in this order (a repeat or a gap fails)."""
        for expected in ids:
            arrived = await asyncio.wait_for(self.arrivals.get(), WAIT_SECONDS)
            assert arrived == expected, (arrived, expected, self.ids)


class NotifyingStore(FileCursorStore):
    """The file store, telling the test each cursor it saved."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved: asyncio.Queue[str] = asyncio.Queue()

    async def save(self, stream: str, cursor: str) -> None:
        await super().save(stream, cursor)
        self.saved.put_nowait(cursor)

    async def until_saved(self, cursor: str) -> None:
        while (await asyncio.wait_for(self.saved.get(), WAIT_SECONDS)) != cursor:
            pass


async def decide(url: str, token: str, count: int) -> list[str]:
    async with CaseworkClient(url, token) as reviewer:
        return [(await decide_next(reviewer)).id for _ in range(count)]


async def stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_stream_resumes_across_service_and_consumer_restarts(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection, tmp_path: Path
) -> None:
    tokens = await create_live_tokens(owner_db)
    env = serve_env(test_database)
    address, elsewhere = free_ports(2)
    cursor_file = tmp_path / "cursors.json"
    seen = Seen()
    made: list[str] = []

    async with serve_on(env, address) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            api = Api(http)
            await api.configure_queue(tokens.admin, "kyc")
            await api.enqueue(tokens.integration, "kyc", {f"c-{n}": {"n": n} for n in range(ITEMS)})
        # The integration's last processed decision before it starts: its saved cursor.
        [first] = await decide(url, tokens.rita, 1)
        await FileCursorStore(cursor_file).save(STREAM, first)

        consumer = CaseworkClient(url, tokens.integration, reconnect_max_seconds=0.5)
        store = NotifyingStore(cursor_file)
        stream = asyncio.create_task(consumer.decision_events("kyc", store, seen.handler()))
        made += await decide(url, tokens.rita, 5)
        await seen.expect(made[0:5])
    # The service stopped with the stream open; the consumer keeps knocking at `address`.
    assert not stream.done()

    async with serve_on(env, elsewhere) as other:
        # Decided while the consumer cannot reach any service.
        made += await decide(other, tokens.rob, 5)

    async with serve_on(env, address) as url:
        await seen.expect(made[5:10])
        made += await decide(url, tokens.rita, 5)
        await seen.expect(made[10:15])
        await store.until_saved(made[14])
        await stopped(stream)
        assert json.loads(cursor_file.read_text()) == {STREAM: made[14]}

        # The consumer's process restarts; its handler fails on the first decision.
        made += await decide(url, tokens.rita, 2)
        failing = asyncio.create_task(
            consumer.decision_events(
                "kyc", FileCursorStore(cursor_file), seen.handler(fail_on=made[15])
            )
        )
        with pytest.raises(HandlerFailed):
            await asyncio.wait_for(failing, WAIT_SECONDS)
        await seen.expect(made[15:16])
        assert json.loads(cursor_file.read_text()) == {STREAM: made[14]}

        # And again, with a handler that succeeds: the failed one comes again, then the rest.
        store = NotifyingStore(cursor_file)
        again = asyncio.create_task(consumer.decision_events("kyc", store, seen.handler()))
        await seen.expect(made[15:17])
        await store.until_saved(made[16])
        await stopped(again)
        await consumer.aclose()

    assert json.loads(cursor_file.read_text()) == {STREAM: made[16]}
    assert seen.arrivals.empty(), "a decision arrived twice"
    # Every decision once, in the order made, except the one whose handler failed.
    assert seen.ids == [*made[:16], made[15], made[16]]
    assert len(set(made)) == len(made) == 17
    rows: list[Any] = await owner_conn.fetch(
        "SELECT id FROM review_decisions WHERE queue = 'kyc' AND id > $1 ORDER BY id",
        int(first),
    )
    assert [str(row["id"]) for row in rows] == made
