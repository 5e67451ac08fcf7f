"""The PostGraphile paths: PostGraphile v4 over the raw+notify path's SQL, as a node process.

PostGraphile is installed from npm into bench/peers/.cache (outside git) on first use and
reused after. It serves the schema `peer_api` of review_queue.sql, whose two VOLATILE
functions become the mutations `claimNext` and `submitDecision`, with the options its
documentation recommends for production that concern one HTTP request (no watch, no
GraphiQL, no query log, dynamic JSON, RBAC-aware schema, error codes only).

`postgraphile`: requests are authenticated the way PostGraphile does it itself: a JWT per
reviewer, verified by PostGraphile, its `sub` handed to the functions as `jwt.claims.sub`
(so each request also sets that setting in its transaction).
`postgraphile-nojwt`: no authentication at all, the upper bound of this peer: PostGraphile
serves `peer_open`, whose functions take the actor as an argument, and is started without
a JWT secret; the requests carry no Authorization header.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import benchlib
from http1 import KeepAliveConnection
from peer_raw import VERDICT, count_decisions, reviewer_name

CACHE_DIR = Path(__file__).with_name(".cache")
PACKAGE = "postgraphile@4"
SCHEMA = "peer_api"
OPEN_SCHEMA = "peer_open"
JWT_SECRET = "casework-peers-bench"
READY_ATTEMPTS = 200
READY_INTERVAL_SECONDS = 0.05

CLAIM = "mutation($q:String!){ claimNext(input:{queue:$q}){ claim { id leaseToken } } }"
DECIDE = "mutation($i:SubmitDecisionInput!){ submitDecision(input:$i){ decision { id } } }"
# Without authentication the actor is an argument of each mutation.
OPEN_CLAIM = (
    "mutation($q:String!,$a:String!){ claimNext(input:{queue:$q,actor:$a}){ "
    "claim { id leaseToken } } }"
)


def cli_path(cache: Path = CACHE_DIR) -> Path:
    return cache / "node_modules" / "postgraphile" / "cli.js"


def ensure_installed(cache: Path = CACHE_DIR) -> str:
    """Installs PostGraphile v4 with npm unless it is there; returns its version."""
    if not cli_path(cache).exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("the postgraphile path needs npm (and node) on PATH")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", PACKAGE],
            check=True,
        )
    manifest = json.loads((cache / "node_modules" / "postgraphile" / "package.json").read_text())
    version: str = manifest["version"]
    return version


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def reviewer_jwt(index: int) -> str:
    """An HS256 JWT for one reviewer. Written with hmac rather than a JWT library: the bench
    only mints tokens PostGraphile verifies, and this is all HS256 signing is."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = _b64(json.dumps({"sub": reviewer_name(index), "aud": "postgraphile"}).encode())
    signed = f"{header}.{claims}"
    signature = hmac.new(JWT_SECRET.encode(), signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{_b64(signature)}"


@contextlib.asynccontextmanager
async def postgraphile_server(
    dsn: str, pool_size: int, *, jwt: bool = True
) -> AsyncIterator[benchlib.Server]:
    """`node cli.js` on 127.0.0.1 with a pool of `pool_size`: serving `peer_api` with a JWT
    secret, or without one `peer_open`."""
    port = benchlib.free_port()
    node = shutil.which("node")
    if node is None:
        raise SystemExit("the postgraphile path needs node on PATH")
    argv = [
        node,
        str(cli_path()),
        "--connection", dsn,
        "--schema", SCHEMA if jwt else OPEN_SCHEMA,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--max-pool-size", str(pool_size),
        "--disable-graphiql",
        "--disable-query-log",
        "--dynamic-json",
        "--no-setof-functions-contain-nulls",
        "--no-ignore-rbac",
        "--extended-errors", "errcode",
        "--legacy-relations", "omit",
    ]  # fmt: skip
    if jwt:
        argv += ["--jwt-secret", JWT_SECRET]
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            *argv,
            env={**os.environ, "NODE_ENV": "production"},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        server = benchlib.Server(f"http://127.0.0.1:{port}", process.pid, log)
        try:
            if not await _wait_ready(port, process):
                raise RuntimeError(f"PostGraphile did not start:\n{server.log_tail()}")
            yield server
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), timeout=10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def _wait_ready(port: int, process: asyncio.subprocess.Process) -> bool:
    """Posts `{ __typename }` until it answers (PostGraphile v4 has no health route),
    a bounded number of times."""
    for _ in range(READY_ATTEMPTS):
        if process.returncode is not None:
            return False
        with contextlib.suppress(OSError):
            async with KeepAliveConnection("127.0.0.1", port) as probe:
                await probe.post_json("/graphql", {"query": "{ __typename }"}, {})
                return True
        await asyncio.sleep(READY_INTERVAL_SECONDS)
    return False


def graphql_worker(connections: list[KeepAliveConnection], *, jwt: bool) -> benchlib.Worker:
    """claimNext then submitDecision per cycle: with a reviewer's JWT, or (without
    authentication) naming the reviewer in each mutation's input."""
    tokens = [reviewer_jwt(index) if jwt else None for index in range(len(connections))]
    claim_document = CLAIM if jwt else OPEN_CLAIM

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        token = tokens[index]
        client = connections[index]
        actor = {} if jwt else {"a": reviewer_name(index)}
        done = 0
        while tickets.take() if tickets else done < count:
            variables = {"q": benchlib.QUEUE, **actor}
            data = await benchlib.graphql_post(client, token, claim_document, variables)
            claim = data["claimNext"]["claim"]
            if claim is None:
                raise RuntimeError("claimNext found nothing; is --items large enough?")
            decision = {
                "itemId": claim["id"],
                "leaseToken": claim["leaseToken"],
                "verdict": VERDICT,
            }
            if not jwt:
                decision["actor"] = reviewer_name(index)
            data = await benchlib.graphql_post(client, token, DECIDE, {"i": decision})
            if data["submitDecision"]["decision"] is None:
                raise RuntimeError(f"decision on item {claim['id']} was refused")
            done += 1
        return done

    return work


async def measure(
    server: str, database: str, concurrency: int, cycles: int, warmup: int, *, jwt: bool = True
) -> benchlib.Measurement:
    owner = await asyncpg.connect(benchlib.owner_dsn(server, database))
    try:
        async with (
            postgraphile_server(benchlib.owner_dsn(server, database), concurrency, jwt=jwt) as node,
            contextlib.AsyncExitStack() as stack,
        ):
            cpu = benchlib.CpuWindow(owner, database, node.pid)
            connections = [
                await stack.enter_async_context(KeepAliveConnection("127.0.0.1", _port(node)))
                for _ in range(concurrency)
            ]
            warmed, done, elapsed, used = await benchlib.drive(
                graphql_worker(connections, jwt=jwt), concurrency, cycles, warmup, cpu
            )
        return benchlib.Measurement(done, elapsed, warmed, await count_decisions(owner), used)
    finally:
        await owner.close()


def _port(server: benchlib.Server) -> int:
    return int(server.base_url.rsplit(":", 1)[1])
