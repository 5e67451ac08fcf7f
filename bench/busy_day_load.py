"""The people of bench/busy_day.py: reviewers, managers and an integration, as asyncio tasks.

Every request is one of the console's own documents, read from the console's source
(server/console/static/js/operations.js) as the browser sends it; the integration's two
documents are the plainest a client would write. Each timed request goes into a Recorder,
which keeps what completed since the step's window opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import benchlib
import websockets
from http1 import KeepAliveConnection
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from server.config import REPO_ROOT

OPERATIONS_JS = REPO_ROOT / "server" / "console" / "static" / "js" / "operations.js"
PROTOCOL = Subprotocol("graphql-transport-ws")
OPEN_SECONDS = 60.0
# Under uvicorn's timeout_keep_alive (5 s), so a request never meets a connection the server
# is closing.
KEEP_ALIVE_SECONDS = 4.0
# The console has no leaseEvents document of its own (its pages follow queueBacklog and
# itemUpdates); an idle console of the busy day follows both, as multiplex_bench's do.
LEASE_EVENTS = """
subscription LeaseEvents($queue: String!) {
  leaseEvents(queue: $queue) { kind queue itemId owner }
}"""
# The integration: enqueue, and follow the queue's decisions to act on them.
ENQUEUE = """
mutation Enqueue($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename
    ... on EnqueuedItems { items { created } }
    ... on Error { message }
  }
}"""
DECISION_EVENTS = """
subscription Decisions($queue: String!) {
  decisionEvents(queue: $queue) { id queue verdict reasonCode reviewer decidedAt }
}"""

_CONSTANT = re.compile(r"^(?:export )?const (\w+) = `(.*?)`;", re.S | re.M)
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def console_documents() -> dict[str, str]:
    """Every template constant of operations.js, its ${...} filled in as the browser does
    (each constant is defined before it is used)."""
    texts: dict[str, str] = {}
    for name, body in _CONSTANT.findall(OPERATIONS_JS.read_text()):
        texts[name] = _PLACEHOLDER.sub(lambda match: texts[match.group(1)], body)
    return texts


DOCUMENTS = console_documents()


class Recorder:
    """Seconds per operation, kept from the last reset on; counts of what went wrong."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.first_errors: list[str] = []

    def reset(self) -> None:
        self.samples = defaultdict(list)
        self.counts = defaultdict(int)

    def add(self, operation: str, seconds: float) -> None:
        self.samples[operation].append(seconds)

    def count(self, what: str, detail: str | None = None) -> None:
        self.counts[what] += 1
        if detail is not None and len(self.first_errors) < 5:
            self.first_errors.append(f"{what}: {detail[:300]}")
            print(f"  ! {what}: {detail[:300]}", flush=True)

    async def timed(
        self,
        operation: str,
        connection: KeepAliveConnection,
        token: str,
        document: str,
        variables: dict[str, Any],
    ) -> dict[str, Any] | None:
        """One request, timed; None (and an error counted) if it failed."""
        started = time.perf_counter()
        try:
            data = await benchlib.graphql_post(connection, token, document, variables)
        except Exception as error:  # a failed request is a figure, not the end of the run
            self.count(f"{operation} errors", f"{type(error).__name__}: {error}")
            return None
        self.add(operation, time.perf_counter() - started)
        return data


@dataclass(frozen=True)
class Pace:
    """Reviewers' think times in seconds at human pace, divided by the time scale; the
    managers' interval, not divided."""

    think_low: float
    think_high: float
    scale: float
    manager_interval: float
    note_share: float = 0.3
    renew_share: float = 0.3
    release_share: float = 0.1

    def think(self, rng: random.Random) -> float:
        return rng.uniform(self.think_low, self.think_high) / self.scale

    @property
    def mean_think(self) -> float:
        return (self.think_low + self.think_high) / 2 / self.scale


class LiveSocket:
    """One graphql-transport-ws socket; each subscription's `next` goes to its callback."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.messages = 0
        self.problem: str | None = None
        self._ids = itertools.count(1)
        self._handlers: dict[str, Callable[[dict[str, Any]], None] | None] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, token: str) -> LiveSocket:
        connection = await connect(
            url,
            subprotocols=[PROTOCOL],
            compression=None,
            proxy=None,
            open_timeout=OPEN_SECONDS,
            ping_interval=None,
        )
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
        await connection.send(json.dumps(init))
        ack = json.loads(await asyncio.wait_for(connection.recv(), OPEN_SECONDS))
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"connection_init answered {ack}")
        return cls(connection)

    async def subscribe(
        self,
        query: str,
        variables: dict[str, Any],
        handler: Callable[[dict[str, Any]], None] | None = None,
    ) -> str:
        operation = str(next(self._ids))
        self._handlers[operation] = handler
        payload = {"query": query, "variables": variables}
        await self.connection.send(
            json.dumps({"id": operation, "type": "subscribe", "payload": payload})
        )
        return operation

    async def complete(self, operation: str) -> None:
        self._handlers.pop(operation, None)
        await self.connection.send(json.dumps({"id": operation, "type": "complete"}))

    async def _read(self) -> None:
        try:
            async for raw in self.connection:
                self.messages += 1
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "ping":
                    await self.connection.send('{"type":"pong"}')
                elif kind == "next" and not message["payload"].get("errors"):
                    handler = self._handlers.get(message["id"])
                    if handler is not None:
                        handler(message["payload"]["data"])
                elif kind in ("next", "error"):
                    self.problem = self.problem or str(message)[:300]
        except websockets.ConnectionClosed:
            self.problem = self.problem or "closed by the server"

    async def close(self) -> None:
        self.connection.transport.abort()
        await asyncio.gather(self._reader, return_exceptions=True)


@dataclass
class Person:
    """What every simulated person holds: a token and a keep-alive connection, opened
    again after a failed request (as a browser would: a replaced serving process drops
    its connections)."""

    token: str
    address: tuple[str, int]
    recorder: Recorder
    rng: random.Random
    connection: KeepAliveConnection | None = None
    last_used: float = 0.0

    async def call(
        self, operation: str, document: str, variables: dict[str, Any]
    ) -> dict[str, Any] | None:
        # uvicorn closes a keep-alive connection idle for 5 s; a browser's pool opens a
        # new one, and so does this, before the clock starts.
        if time.perf_counter() - self.last_used > KEEP_ALIVE_SECONDS:
            await self.hang_up()
        if self.connection is None:
            self.connection = await KeepAliveConnection(*self.address).__aenter__()
        data = await self.recorder.timed(
            operation, self.connection, self.token, document, variables
        )
        self.last_used = time.perf_counter()
        if data is None:
            await self.hang_up()
        return data

    async def hang_up(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with contextlib.suppress(OSError, RuntimeError):
                await connection.__aexit__(None, None, None)


@dataclass
class Reviewer(Person):
    """Claims, reads for a human's think time (noting and renewing on the way), then
    decides, or now and then releases; the console's socket follows the queue's backlog
    and the open item's updates, as the console's reviewer page does."""

    socket: LiveSocket | None = None
    decided: int = 0

    async def run(self, url: str, pace: Pace) -> None:
        # Staggered, so that reviewers added at once do not act in step.
        await asyncio.sleep(self.rng.uniform(0, pace.think_high / pace.scale))
        while True:
            await self.one_item(url, pace)

    async def console(self, url: str) -> LiveSocket:
        """The console's socket, opened again (as the console does) if it was closed."""
        if self.socket is not None and self.socket.problem is not None:
            self.recorder.count("console sockets reopened")
            await self.socket.close()
            self.socket = None
        if self.socket is None:
            self.socket = await LiveSocket.open(url, self.token)
            await self.socket.subscribe(DOCUMENTS["QUEUE_BACKLOG"], {"queue": benchlib.QUEUE})
        return self.socket

    async def one_item(self, url: str, pace: Pace) -> None:
        socket = await self.console(url)
        data = await self.call(
            "claim",
            DOCUMENTS["CLAIM_NEXT"],
            {"queue": benchlib.QUEUE},
        )
        claim: dict[str, Any] = data["claimNext"] if data else {"__typename": "failed"}
        if claim["__typename"] != "Claim":
            if data:
                self.recorder.count(f"claim {claim['__typename']}", str(claim))
            await asyncio.sleep(pace.mean_think)
            return
        lease = {"itemId": claim["item"]["id"], "leaseToken": claim["leaseToken"]}
        follow = await socket.subscribe(
            DOCUMENTS["ITEM_UPDATES"],
            {"itemId": lease["itemId"], "leaseExpiresAt": claim["leaseExpiresAt"]},
        )
        started = time.perf_counter()
        think = pace.think(self.rng)
        if self.rng.random() < pace.note_share:
            await sleep_until(started + 0.3 * think)
            note = {"input": {"itemId": lease["itemId"], "body": "Checked the documents."}}
            await self.call("note", DOCUMENTS["ADD_NOTE"], note)
        if self.rng.random() < pace.renew_share:
            await sleep_until(started + 0.6 * think)
            await self.call("renew", DOCUMENTS["RENEW_LEASE"], lease)
        await sleep_until(started + think)
        if self.rng.random() < pace.release_share:
            await self.call("release", DOCUMENTS["RELEASE_LEASE"], lease)
        else:
            decision = {
                "itemId": lease["itemId"],
                "leaseToken": lease["leaseToken"],
                "verdict": "APPROVE",
                "reasonCode": benchlib.REASON_CODE,
                "evidenceHash": claim["evidenceHash"],
            }
            answer = await self.call(
                "decide",
                DOCUMENTS["SUBMIT_DECISION"],
                {"input": decision},
            )
            result: dict[str, Any] = (
                answer["submitDecision"] if answer else {"__typename": "failed"}
            )
            if result["__typename"] == "DecisionRecorded":
                self.decided += 1
            elif answer:
                self.recorder.count(f"decide {result['__typename']}", str(result))
        with contextlib.suppress(websockets.ConnectionClosed):
            await socket.complete(follow)


@dataclass
class Manager(Person):
    """Reads the queue's manager page every interval: the panels' two operations that a
    live change reruns (QUEUE_STATS, QUEUE_MEASURES), timed together as one refresh."""

    async def run(self, pace: Pace) -> None:
        # Not divided by the time scale: the managers' load is the issue's fixed 50 every
        # 10 s whatever R stands for.
        interval = pace.manager_interval
        await asyncio.sleep(self.rng.uniform(0, interval))
        variables = {"name": benchlib.QUEUE}
        while True:
            started = time.perf_counter()
            stats = await self.call("dashboard stats", DOCUMENTS["QUEUE_STATS"], variables)
            measures = await self.call(
                "dashboard measures",
                DOCUMENTS["QUEUE_MEASURES"],
                variables,
            )
            if stats and measures:
                self.recorder.add("dashboard", time.perf_counter() - started)
            await sleep_until(started + interval)


@dataclass
class Integration(Person):
    """Enqueues once a second as many items as the reviewers decide meanwhile (the rate
    is set by the step), and follows the decision stream: its lag is arrival minus the
    decision's decidedAt (this host's clock and the database's are the same clock)."""

    rate: float = 0.0
    received: int = 0
    socket: LiveSocket | None = None
    keys: itertools.count[int] = field(default_factory=itertools.count)

    def on_decision(self, data: dict[str, Any]) -> None:
        decided = datetime.fromisoformat(data["decisionEvents"]["decidedAt"]).timestamp()
        self.received += 1
        self.recorder.add("decision stream", time.time() - decided)

    async def follow(self, url: str) -> None:
        self.socket = await LiveSocket.open(url, self.token)
        await self.socket.subscribe(DECISION_EVENTS, {"queue": benchlib.QUEUE}, self.on_decision)

    async def run(self, url: str) -> None:
        owed = 0.0
        while True:
            started = time.perf_counter()
            if self.socket is not None and self.socket.problem is not None:
                # Its serving process went: follow again (from now; a real integration
                # would pass the last decision's id as `after`).
                self.recorder.count("decision stream reopened", self.socket.problem)
                await self.socket.close()
                await self.follow(url)
            owed += self.rate
            count, owed = int(owed), owed - int(owed)
            if count:
                items = [
                    {
                        "externalKey": f"live-{next(self.keys):07d}",
                        "priority": self.rng.randint(0, 9),
                        "payload": {"applicant": {"name": "Live applicant"}, "score": 1},
                    }
                    for _ in range(count)
                ]
                await self.call(
                    "enqueue",
                    ENQUEUE,
                    {"queue": benchlib.QUEUE, "items": items},
                )
            await sleep_until(started + 1.0)


async def sleep_until(moment: float) -> None:
    delay = moment - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
