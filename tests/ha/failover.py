"""The failover run's clients: reviewers who claim and decide over HTTP and retry what they
lost, an integration that follows `decisionEvents` with its cursor across reconnects, and a
probe of `/readyz`. Each records what it saw, for the test to compare with the new primary's
log. Every wait is bounded; a retry waits RETRY_SECONDS, as a client's backoff would."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.live.helpers import DECISION_EVENTS, LEASE_EVENTS, QUEUE_BACKLOG
from tests.live.wsclient import Closed, graphql_socket

RETRY_SECONDS = 0.1
# One request's budget: longer than a healthy answer takes on this loaded machine, shorter
# than a failover, so that a request stuck on the old primary counts as lost.
REQUEST_SECONDS = 5.0
# A submission whose answer keeps being lost is retried this long before the run fails.
RESOLVE_WITHIN_SECONDS = 60.0


class Lost(Exception):
    """The answer never came, or said UNAVAILABLE: what was asked may or may not be done."""


@dataclass
class Submission:
    """One decision as a reviewer submitted it, and how its answer came."""

    reviewer: str
    item_id: str
    lease_token: str
    # When it was first sent (time.monotonic()), and when its definitive answer came.
    sent_at: float
    answered_at: float = 0.0
    # How the answers were lost before the definitive one: "timeout", "connection",
    # "UNAVAILABLE" or an HTTP status.
    losses: list[str] = field(default_factory=list)
    # DecisionRecorded or StaleLease; for DecisionRecorded its id and whether a replay.
    answer: str = ""
    decision_id: str | None = None
    replay: bool = False
    decided_under_this_lease: bool | None = None


@dataclass
class Observed:
    """What every client saw, shared by the reviewers."""

    submissions: list[Submission] = field(default_factory=list)
    lost_claims: list[str] = field(default_factory=list)
    # Error codes other than UNAVAILABLE, with their message: each one is a finding.
    unexpected: list[str] = field(default_factory=list)

    @property
    def acknowledged(self) -> dict[str, str]:
        """item id -> decision id, of every DecisionRecorded a reviewer received."""
        return {
            s.item_id: s.decision_id
            for s in self.submissions
            if s.answer == "DecisionRecorded" and s.decision_id is not None
        }

    def first_success_after(self, moment: float) -> Submission | None:
        """The first decision acknowledged on a request sent after `moment`."""
        after = [
            s
            for s in self.submissions
            if s.answer == "DecisionRecorded" and not s.losses and s.sent_at >= moment
        ]
        return min(after, key=lambda s: s.answered_at, default=None)


class Reviewer:
    """Claims and decides through one process after another (a load balancer's choice),
    until `done()` says the queue is finished."""

    def __init__(
        self,
        name: str,
        token: str,
        clients: list[httpx.AsyncClient],
        observed: Observed,
        queue: str,
    ) -> None:
        self.name = name
        self._token = token
        self._clients = itertools.cycle(clients)
        self._observed = observed
        self._queue = queue

    async def _post(self, query: str, **variables: Any) -> dict[str, Any]:
        """The operation's data; raises Lost when the answer did not come, or came as
        UNAVAILABLE."""
        client = next(self._clients)
        try:
            response = await client.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=REQUEST_SECONDS,
            )
        except httpx.TimeoutException as error:
            raise Lost("timeout") from error
        except httpx.TransportError as error:
            raise Lost("connection") from error
        try:
            body: dict[str, Any] = response.json()
        except ValueError as error:
            raise Lost(f"HTTP {response.status_code}") from error
        codes = [error.get("extensions", {}).get("code") for error in body.get("errors", [])]
        if "UNAVAILABLE" in codes:
            assert response.status_code == 503, (response.status_code, body)
            raise Lost("UNAVAILABLE")
        if codes:
            self._observed.unexpected.append(f"{self.name}: {codes} {body['errors']}")
            raise Lost(",".join(str(code) for code in codes))
        assert response.status_code == 200, (response.status_code, body)
        data: dict[str, Any] = body["data"]
        return data

    async def run(self, done: Callable[[], Awaitable[bool]]) -> None:
        while True:
            try:
                claim = (await self._post(CLAIM, queue=self._queue))["claimNext"]
            except Lost as lost:
                # A lease may have been taken for us that we cannot use: it lapses.
                self._observed.lost_claims.append(f"{self.name}: {lost}")
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if claim["__typename"] == "QueueEmpty":
                # Items under leases whose claims were lost come back when those lapse.
                if await done():
                    return
                await asyncio.sleep(RETRY_SECONDS)
                continue
            assert claim["__typename"] == "Claim", claim
            await self._decide(claim)

    async def walk_away_with_a_claim(self) -> str:
        """Claims an item and never decides it (its lease is left to lapse); its id."""
        deadline = time.monotonic() + RESOLVE_WITHIN_SECONDS
        while True:
            try:
                claim = (await self._post(CLAIM, queue=self._queue))["claimNext"]
            except Lost:
                assert time.monotonic() < deadline, "no claim answered"
                await asyncio.sleep(RETRY_SECONDS)
                continue
            assert claim["__typename"] == "Claim", claim
            item_id: str = claim["item"]["id"]
            return item_id

    async def _decide(self, claim: dict[str, Any]) -> None:
        entry = decision_input(claim, "APPROVE", "documents_ok")
        submission = Submission(
            self.name, claim["item"]["id"], claim["leaseToken"], time.monotonic()
        )
        self._observed.submissions.append(submission)
        deadline = submission.sent_at + RESOLVE_WITHIN_SECONDS
        while True:
            try:
                result = (await self._post(DECIDE, input=entry))["submitDecision"]
            except Lost as lost:
                submission.losses.append(str(lost))
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"unresolved after {RESOLVE_WITHIN_SECONDS} s: {submission}"
                    ) from lost
                await asyncio.sleep(RETRY_SECONDS)
                continue
            break
        submission.answered_at = time.monotonic()
        submission.answer = result["__typename"]
        if result["__typename"] == "DecisionRecorded":
            submission.decision_id = result["decision"]["id"]
            submission.replay = result["replay"]
        elif result["__typename"] == "StaleLease":
            submission.decided_under_this_lease = result["decidedUnderThisLease"]
        else:
            raise AssertionError(f"{self.name}: unexpected answer {result} to {submission}")


@dataclass
class Stream:
    """An integration on `decisionEvents`: every id received, in order, and each reconnect."""

    received: list[str] = field(default_factory=list)
    # Why each connection ended: a close, an error message, a refused connect.
    endings: list[str] = field(default_factory=list)


async def follow_decisions(
    urls: list[str], token: str, queue: str, cursor: str, stream: Stream, stop: asyncio.Event
) -> None:
    """Follows the stream from `cursor` until `stop`, reconnecting (to the next process) with
    the last id received as the cursor whenever the connection or the stream ends."""
    for url in itertools.cycle(urls):
        if stop.is_set():
            return
        try:
            async with graphql_socket(url, token) as socket:
                last = stream.received[-1] if stream.received else cursor
                operation = await socket.subscribe(DECISION_EVENTS, queue=queue, after=last)
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        message = await socket.message(operation, wait=0.5)
                        if message["type"] != "next":
                            stream.endings.append(f"{message['type']}: {message.get('payload')}")
                            break
                        payload = message["payload"]
                        if payload.get("errors"):
                            stream.endings.append(f"errors: {payload['errors']}")
                            break
                        stream.received.append(payload["data"]["decisionEvents"]["id"])
        except (
            OSError,
            TimeoutError,
            Closed,
            websockets.WebSocketException,
            AssertionError,
        ) as error:
            stream.endings.append(f"{type(error).__name__}: {error}")
        if not stop.is_set():
            await asyncio.sleep(RETRY_SECONDS)


@dataclass
class Console:
    """A reviewer's console on one process: its leaseEvents and queueBacklog, each message
    with the time it came (time.monotonic()), on one socket kept open through the run."""

    lease_events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    backlogs: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    # How a subscription ended, if one did before the run's end.
    ended: list[str] = field(default_factory=list)

    def lease_events_after(self, moment: float) -> list[dict[str, Any]]:
        return [event for at, event in self.lease_events if at >= moment]

    def backlogs_after(self, moment: float) -> list[dict[str, Any]]:
        return [figure for at, figure in self.backlogs if at >= moment]


async def watch_console(
    url: str,
    token: str,
    queue: str,
    console: Console,
    started: asyncio.Event,
    stop: asyncio.Event,
) -> None:
    async with graphql_socket(url, token) as socket:
        leases = await socket.subscribe(LEASE_EVENTS, queue=queue)
        backlog = await socket.subscribe(QUEUE_BACKLOG, queue=queue)

        async def pump(operation: str, into: list[tuple[float, dict[str, Any]]], name: str) -> None:
            while not stop.is_set():
                try:
                    message = await socket.message(operation, wait=0.5)
                except TimeoutError:
                    continue
                if message["type"] != "next":
                    console.ended.append(f"{name}: {message}")
                    return
                into.append((time.monotonic(), message["payload"]["data"][name]))
                # The first snapshot follows the lease subscription's start: both are live.
                started.set()

        await asyncio.gather(
            pump(leases, console.lease_events, "leaseEvents"),
            pump(backlog, console.backlogs, "queueBacklog"),
        )


@dataclass
class Readiness:
    """Every /readyz answer of each process: (time.monotonic(), status; 0 for no answer)."""

    answers: dict[str, list[tuple[float, int]]] = field(default_factory=dict)

    def after(self, url: str, moment: float) -> list[int]:
        return [status for at, status in self.answers[url] if at >= moment]


async def probe_readiness(
    clients: list[httpx.AsyncClient], readiness: Readiness, stop: asyncio.Event
) -> None:
    async def probe(client: httpx.AsyncClient) -> None:
        answers = readiness.answers.setdefault(str(client.base_url), [])
        while not stop.is_set():
            try:
                status = (await client.get("/readyz", timeout=REQUEST_SECONDS)).status_code
            except httpx.HTTPError:
                status = 0
            answers.append((time.monotonic(), status))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.05)

    await asyncio.gather(*(probe(client) for client in clients))
