"""CPU of the application per claim+decide cycle, without HTTP sockets or a server around it.

The Starlette application (create_app(dsn, dev=False), with its lifespan: pool, listener,
expiry timer) is called directly as an ASGI callable, one request at a time: claimNext then
submitDecision, as bench/claim_bench.py's GraphQL path sends them. What is measured is this
process's CPU per cycle (time.process_time), so it is the application's own cost: Starlette,
Strawberry, graphql-core, Casework and asyncpg's client side, not uvicorn's parsing, not the
socket and not PostgreSQL. It moves only when the application's code does, which makes it
the instrument for the server half of a cycle; claim_bench measures the whole.

    .venv/bin/python bench/request_cost.py [--cycles 2000] [--profile out.pstats]

--profile writes a cProfile of the timed cycles (read it with `python -m pstats`).
--floor also times `{ __typename }` requests, side by side: everything a request costs
(middleware, token, Strawberry, graphql-core, the access line) but a resolver and a query.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import random
import time
from typing import Any

import benchlib
from claim_bench import CLAIM, DECIDE, reviewer_name

from server.app import create_app
from server.config import Settings
from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.observability.logs import LogFormat, configure_logging
from server.store.database import Database, create_pool


class DirectClient:
    """POSTs GraphQL to an ASGI application in this process, as a keep-alive client would."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._headers = [
            (b"host", b"bench"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
        ]

    async def post(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/graphql",
            "raw_path": b"/graphql",
            "query_string": b"",
            "root_path": "",
            "headers": [*self._headers, (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        sent = False
        chunks: list[bytes] = []
        status = 0

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self._app(scope, receive, send)
        if status != 200:
            raise RuntimeError(f"status {status}: {b''.join(chunks)!r}")
        answer: dict[str, Any] = json.loads(b"".join(chunks))
        if answer.get("errors"):
            raise RuntimeError(f"GraphQL call failed: {answer}")
        data: dict[str, Any] = answer["data"]
        return data


async def cycle(client: DirectClient) -> None:
    claim = (await client.post(CLAIM, {"q": benchlib.QUEUE}))["claimNext"]
    if claim["__typename"] != "Claim":
        raise RuntimeError(f"claim returned {claim}")
    decision = {
        "itemId": claim["item"]["id"],
        "leaseToken": claim["leaseToken"],
        "verdict": "APPROVE",
        "reasonCode": benchlib.REASON_CODE,
        "evidenceHash": claim["evidenceHash"],
    }
    result = (await client.post(DECIDE, {"i": decision}))["submitDecision"]
    if result["__typename"] != "DecisionRecorded":
        raise RuntimeError(f"decision returned {result}")


FLOOR = "{ __typename }"


async def floor_pair(client: DirectClient) -> None:
    """Two requests that resolve nothing: what the stack costs a cycle before any work."""
    for _ in range(2):
        if (await client.post(FLOOR, {}))["__typename"] != "Query":
            raise RuntimeError("the floor query did not answer")


async def seed(server: str, name: str, items: int) -> str:
    await benchlib.create_migrated(server, name)
    queries = benchlib.load_queries()
    app_pool = await create_pool(benchlib.app_dsn(server, name), min_size=1, max_size=2)
    owner_pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
    try:
        db = Database(app_pool, queries)
        await benchlib.seed_queue(db)
        rng = random.Random(20240601)
        await benchlib.enqueue(db, [f"item-{n:06d}" for n in range(items)], rng)
        token = await create_token(
            Database(owner_pool, queries),
            user=reviewer_name(0),
            role=Role.REVIEWER,
            queues=[benchlib.QUEUE],
        )
        async with owner_pool.acquire() as conn:
            await conn.execute("VACUUM ANALYZE")
        return token
    finally:
        await app_pool.close()
        await owner_pool.close()


async def main(arguments: argparse.Namespace) -> None:
    server = benchlib.require_local(arguments.database_url)
    name = benchlib.new_name("requestcost")
    warmup, cycles = arguments.warmup, arguments.cycles
    token = await seed(server, name, warmup + cycles + 10)
    settings = Settings.from_env()
    configure_logging(LogFormat(settings.log_format), settings.log_level)
    app = create_app(benchlib.app_dsn(server, name), dev=False, settings=settings)
    try:
        async with app.router.lifespan_context(app):
            client = DirectClient(app, token)
            for _ in range(warmup):
                await cycle(client)
            profile = cProfile.Profile() if arguments.profile else None
            cpu, wall = time.process_time(), time.perf_counter()
            if profile:
                profile.enable()
            for _ in range(cycles):
                await cycle(client)
            if profile:
                profile.disable()
                profile.dump_stats(arguments.profile)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            floor = None
            if arguments.floor:
                floor = time.process_time()
                for _ in range(cycles):
                    await floor_pair(client)
                floor = time.process_time() - floor
    finally:
        await benchlib.drop_database(server, name)
    rows = [
        [
            "claimNext + submitDecision (a cycle)",
            str(cycles),
            f"{cpu / cycles * 1000:.3f}",
            f"{cpu / cycles / 2 * 1e6:.0f}",
            f"{wall / cycles * 1000:.3f}",
            "1.00",
        ]
    ]
    if floor is not None:
        rows.append(
            [
                f"two {FLOOR!r} (--floor)",
                str(cycles),
                f"{floor / cycles * 1000:.3f}",
                f"{floor / cycles / 2 * 1e6:.0f}",
                "-",
                f"{floor / cpu:.2f}",
            ]
        )
    benchlib.print_table(
        [
            "requests",
            "pairs",
            "application CPU ms per pair",
            "us per request",
            "wall ms per pair",
            "of a cycle",
        ],
        rows,
        title="wall: PostgreSQL included",
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--profile", help="write a cProfile of the timed cycles here")
    parser.add_argument("--floor", action="store_true", help="also time { __typename } pairs")
    return parser.parse_args()


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
