"""CPU of the application per claim+decide cycle, without HTTP sockets or a server around it.

The Starlette application (create_app(dsn, dev=False), with its lifespan: pool, listener,
expiry timer) is called directly as an ASGI callable, one request at a time: claimNext then
submitDecision, as bench/claim_bench.py's GraphQL path sends them. What is measured is this
process's CPU per cycle (time.process_time), so it is the application's own cost: Starlette,
Strawberry, graphql-core, Casework and asyncpg's client side, not uvicorn's parsing, not the
socket and not PostgreSQL. It moves only when the application's code does, which makes it
the instrument for the server half of a cycle; claim_bench measures the whole.

Two applications over one database, side by side: the lean path for trusted documents on,
and off (CASEWORK_LEAN_PATH=0, the general path), with the benchmark's documents trusted
(a manifest written for the run). Their cycles are interleaved in blocks, so both see the
same machine, load and tables; the last column is each one's CPU over the general path's.

    .venv/bin/python bench/request_cost.py [--cycles 2000] [--block 100] [--profile out]

--profile writes a cProfile of each path's timed cycles (out.lean, out.general; read them
with `python -m pstats`).
--floor also times `{ __typename }` requests, both ways: everything a request costs
(middleware, token, the view or the lean route, graphql-core, the access line) but a
resolver and a query.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import benchlib
import orjson
from claim_bench import CLAIM, DECIDE, reviewer_name

from server.app import create_app
from server.config import Settings
from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.graphql.documents.ids import document_id
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
        # orjson: the client's own JSON work is this process's CPU too, and not the server's.
        body = orjson.dumps({"query": query, "variables": variables})
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
        answer: dict[str, Any] = orjson.loads(b"".join(chunks))
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


@dataclass
class Served:
    """One application (the lean path on or off) and the CPU it has spent."""

    label: str
    app: Any
    client: DirectClient
    cpu: float = 0.0
    wall: float = 0.0
    floor: float = 0.0


def trusting(settings: Settings, manifest: Path, *, lean: bool) -> Settings:
    """The settings with the benchmark's documents trusted and the lean path on or off."""
    documents = replace(settings.documents, manifests=(manifest,), lean_path=lean)
    return replace(settings, documents=documents)


async def timed(
    path: Served,
    work: Callable[[DirectClient], Awaitable[None]],
    times: int,
    profile: cProfile.Profile | None,
) -> float:
    """Runs `work` `times` times on the path's application; returns the CPU it took."""
    cpu, wall = time.process_time(), time.perf_counter()
    if profile:
        profile.enable()
    for _ in range(times):
        await work(path.client)
    if profile:
        profile.disable()
    path.wall += time.perf_counter() - wall
    return time.process_time() - cpu


async def main(arguments: argparse.Namespace) -> None:
    server = benchlib.require_local(arguments.database_url)
    # A database each (seeded alike): PostgreSQL sends a NOTIFY to the listeners of its own
    # database only, so neither application parses the other's events.
    warmup, cycles, block = arguments.warmup, arguments.cycles, arguments.block
    names = [benchlib.new_name("requestcost") for _ in range(2)]
    tokens = [await seed(server, name, warmup + cycles + 10) for name in names]
    settings = Settings.from_env()
    configure_logging(LogFormat(settings.log_format), settings.log_level)
    manifest = Path(tempfile.mkdtemp()) / "bench-documents.json"
    manifest.write_text(json.dumps({document_id(text): text for text in (CLAIM, DECIDE, FLOOR)}))
    paths = [
        Served(label, app, DirectClient(app, token))
        for label, app, token in (
            (
                "lean",
                create_app(
                    benchlib.app_dsn(server, names[0]),
                    dev=False,
                    settings=trusting(settings, manifest, lean=True),
                ),
                tokens[0],
            ),
            (
                "general (CASEWORK_LEAN_PATH=0)",
                create_app(
                    benchlib.app_dsn(server, names[1]),
                    dev=False,
                    settings=trusting(settings, manifest, lean=False),
                ),
                tokens[1],
            ),
        )
    ]
    # Timed by CPU, not the wall clock: PostgreSQL's share and other processes stay out.
    profiles: dict[str, cProfile.Profile] = {}
    if arguments.profile:
        for path in paths:
            for kind in ("", "floor-"):
                profiles[kind + path.label.split()[0]] = cProfile.Profile(time.process_time)
    try:
        async with contextlib.AsyncExitStack() as stack:
            for path in paths:
                await stack.enter_async_context(path.app.router.lifespan_context(path.app))
            for path in paths:
                for _ in range(warmup):
                    await cycle(path.client)
            # Interleaved in blocks, so that both see the same machine and the same tables.
            for start in range(0, cycles, block):
                for path in paths:
                    name = path.label.split()[0]
                    spent = await timed(path, cycle, min(block, cycles - start), profiles.get(name))
                    path.cpu += spent
            if arguments.floor:
                for start in range(0, cycles, block):
                    for path in paths:
                        name = "floor-" + path.label.split()[0]
                        spent = await timed(
                            path, floor_pair, min(block, cycles - start), profiles.get(name)
                        )
                        path.floor += spent
    finally:
        for name in names:
            await benchlib.drop_database(server, name)
    lean, general = paths
    assert lean.app.state.lean_graphql.answered >= 2 * cycles, "the lean path did not answer"
    assert general.app.state.lean_graphql.answered == 0
    for label, profile in profiles.items():
        profile.dump_stats(f"{arguments.profile}.{label}")
    rows = []
    for path in paths:
        rows.append(
            [
                f"claimNext + submitDecision, {path.label}",
                str(cycles),
                f"{path.cpu / cycles * 1000:.3f}",
                f"{path.cpu / cycles / 2 * 1e6:.0f}",
                f"{path.wall / cycles * 1000:.3f}",
                f"{path.cpu / general.cpu:.2f}",
            ]
        )
    if arguments.floor:
        for path in paths:
            rows.append(
                [
                    f"two {FLOOR!r}, {path.label}",
                    str(cycles),
                    f"{path.floor / cycles * 1000:.3f}",
                    f"{path.floor / cycles / 2 * 1e6:.0f}",
                    "-",
                    f"{path.floor / general.floor:.2f}",
                ]
            )
    benchlib.print_table(
        [
            "requests",
            "pairs",
            "application CPU ms per pair",
            "us per request",
            "wall ms per pair",
            "of the general path's",
        ],
        rows,
        title=f"wall: PostgreSQL included; interleaved in blocks of {block} cycles",
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--block", type=int, default=100, help="cycles per interleaved block")
    parser.add_argument("--profile", help="write a cProfile of the timed cycles here")
    parser.add_argument("--floor", action="store_true", help="also time { __typename } pairs")
    return parser.parse_args()


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
