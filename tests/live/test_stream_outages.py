"""decisionEvents and exceptionEvents across PostgreSQL outages: real server, real sockets,
a PostgreSQL of the test's own that it stops and starts.

For a 5 s stop and for a fast restart, an integration follows both streams from a cursor
on one socket while decisions and exceptions are written before the outage, right after
the restart (while the streams may still be waiting for the database) and after. The
client does nothing: no resubscription, no reconnect. It receives exactly the table's
rows, each once, and its socket stays open (the token checks the outage made fail are not
revocations). The server's log says lost and back, once each, without a traceback.

Also: the listener's connection names itself in pg_stat_activity.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from server.domain.model import Role
from server.events.listener import APPLICATION_NAME
from server.graphql.websocket import TRY_AGAIN_LATER_REASON
from server.store.database import Database, connect, create_pool
from server.store.queries import Queries
from tests import pg
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.api.live_server import Served, casework_serve_process
from tests.conftest import TestDatabase, token_maker
from tests.exceptions.operations import SETUP_SUPPLIER_WORKFLOW, mismatch_input
from tests.live.helpers import (
    DECISION_EVENTS,
    DOWN_WITHIN_SECONDS,
    POLL_SECONDS,
    RECOVER_WITHIN_SECONDS,
    Api,
    PrivatePostgres,
    health,
    migrated_database,
    private_postgres,
    serve_env,
    wait_for_readiness,
)
from tests.live.wsclient import GraphQLSocket, graphql_socket, refusal

WORKFLOW = "supplier_onboarding"
EXCEPTION_EVENTS = """
subscription($workflow: String!, $after: ID) {
  exceptionEvents(workflow: $workflow, after: $after) { id kind }
}
"""
RAISE = """
mutation($input: RaiseExceptionInput!) {
  raiseException(input: $input) { __typename ... on Error { message } }
}
"""
# Decisions and exceptions written in each phase.
PER_PHASE = 3
OUTAGE_SECONDS = 5.0
STREAM_LOST = "decision and exception streams: the database is unavailable"
STREAM_BACK = "decision and exception streams: the database is back"


@dataclass(frozen=True)
class Tokens:
    admin: str
    integration: str
    reviewer: str


async def make_tokens(database: TestDatabase) -> Tokens:
    pool = await create_pool(database.owner_dsn, min_size=1, max_size=2)
    try:
        owner_db = Database(pool, Queries(pg.QUERIES_DIR))

        make = token_maker(owner_db)

        return Tokens(
            admin=await make("ada", Role.ADMIN),
            integration=await make("erp", Role.INTEGRATION),
            reviewer=await make("rita", Role.REVIEWER, "kyc"),
        )
    finally:
        await pool.close()


async def call_until_served(api: Api, token: str, query: str, **variables: Any) -> dict[str, Any]:
    """An HTTP operation, again while the server answers that the database is away (its
    pool's connections died with the restart; a refused attempt wrote nothing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RECOVER_WITHIN_SECONDS
    while True:
        response = await api.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        body: dict[str, Any] = response.json()
        codes = {error.get("extensions", {}).get("code") for error in body.get("errors", [])}
        if response.status_code != 503 and "UNAVAILABLE" not in codes:
            assert response.status_code == 200, response.text
            assert "errors" not in body, body
            data: dict[str, Any] = body["data"]
            return data
        if loop.time() > deadline:
            raise AssertionError(f"still unavailable after {RECOVER_WITHIN_SECONDS} s: {body}")
        await asyncio.sleep(POLL_SECONDS)


class Writer:
    """Decisions in `kyc` and exceptions in the supplier workflow, over HTTP."""

    def __init__(self, api: Api, tokens: Tokens) -> None:
        self.api, self.tokens = api, tokens
        self.raised = 0

    async def decide(self) -> None:
        token = self.tokens.reviewer
        claim = (await call_until_served(self.api, token, CLAIM, queue="kyc"))["claimNext"]
        assert claim["__typename"] == "Claim", claim
        entry = decision_input(claim, "APPROVE", "documents_ok")
        recorded = (await call_until_served(self.api, token, DECIDE, input=entry))["submitDecision"]
        assert recorded["__typename"] in {"DecisionRecorded", "Replayed"}, recorded

    async def raise_one(self) -> None:
        self.raised += 1
        entry = mismatch_input(f"SUP-{self.raised:04}")
        raised = (await call_until_served(self.api, self.tokens.integration, RAISE, input=entry))[
            "raiseException"
        ]
        assert raised["__typename"] == "ExceptionRaised", raised

    async def phase(self) -> None:
        for _ in range(PER_PHASE):
            await self.decide()
            await self.raise_one()


@dataclass
class Streams:
    """Both streams on one socket, and what each has received so far."""

    socket: GraphQLSocket
    decisions_op: str
    exceptions_op: str
    decisions: list[str]
    exceptions: list[str]

    async def read_until(self, decisions: int, exceptions: int, *, within: float) -> None:
        async def read(operation: str, field: str, into: list[str], count: int) -> None:
            while len(into) < count:
                message = await self.socket.message(operation, within)
                assert message["type"] == "next", (field, into, message)
                assert "errors" not in message["payload"], (field, into, message)
                into.append(message["payload"]["data"][field]["id"])

        await asyncio.wait_for(
            asyncio.gather(
                read(self.decisions_op, "decisionEvents", self.decisions, decisions),
                read(self.exceptions_op, "exceptionEvents", self.exceptions, exceptions),
            ),
            within,
        )


async def table_ids(database: TestDatabase, decision_cursor: int, event_cursor: int) -> Any:
    conn = await connect(database.owner_dsn)
    try:
        decisions = await conn.fetch(
            "SELECT id FROM review_decisions WHERE queue = 'kyc' AND id > $1", decision_cursor
        )
        events = await conn.fetch(
            "SELECT id FROM exception_events WHERE workflow = $1 AND id > $2",
            WORKFLOW,
            event_cursor,
        )
    finally:
        await conn.close()
    return {str(row["id"]) for row in decisions}, {str(row["id"]) for row in events}


async def set_up(api: Api, tokens: Tokens, writer: Writer) -> None:
    await api.configure_queue(tokens.admin, "kyc")
    data = await api.call(tokens.admin, SETUP_SUPPLIER_WORKFLOW)
    assert all(value["__typename"] != "InvalidInput" for value in data.values()), data
    await api.enqueue(
        tokens.integration, "kyc", {f"c-{n}": {"n": n} for n in range(4 * PER_PHASE + 1)}
    )
    # The integration's history: it has processed these, and resumes after them.
    await writer.decide()
    await writer.raise_one()


async def wait_for_log(served: Served, needle: str, *, within: float) -> None:
    """Until the server's stderr has a line with `needle` (polled, bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not log_lines(served, needle):
        if loop.time() > deadline:
            raise AssertionError(f"no {needle!r} in the log within {within} s")
        await asyncio.sleep(POLL_SECONDS)


async def outage(
    postgres: PrivatePostgres,
    served: Served,
    client: httpx.AsyncClient,
    seconds: float,
    token: str,
) -> None:
    """PostgreSQL away for `seconds` from the moment it stopped, or (0) a fast restart: up
    again as soon as a stream has found it missing, so that the streams' retry is what is
    tested, not the luck of a read falling into a short window."""
    loop = asyncio.get_running_loop()
    await postgres.stop()
    stopped_at = loop.time()
    # The server noticed: it takes itself out of rotation, and a stream's read failed.
    await wait_for_readiness(client, 503, within=DOWN_WITHIN_SECONDS)
    await wait_for_log(served, STREAM_LOST, within=DOWN_WITHIN_SECONDS)
    # Meanwhile a new socket can neither be refused nor welcomed: "try again later".
    refused = await refusal(served.url, {"authorization": f"Bearer {token}"})
    assert (refused.code, refused.reason) == (1013, TRY_AGAIN_LATER_REASON), refused
    # The length of the outage is what the test is about, not a stand-in for a signal.
    await asyncio.sleep(max(0.0, stopped_at + seconds - loop.time()))
    await postgres.start()


def log_lines(served: Served, needle: str) -> list[str]:
    return [line for line in served.log if needle in line]


@pytest.mark.parametrize("outage_seconds", [OUTAGE_SECONDS, 0.0], ids=["5s-stop", "fast-restart"])
async def test_decision_and_exception_streams_go_on_across_an_outage(outage_seconds: float) -> None:
    async with private_postgres() as postgres:
        database = await migrated_database(postgres.server_dsn)
        tokens = await make_tokens(database)
        # No token cache: the socket's token watch asks the database every second, during
        # the outage too, and must not take "unreachable" for "revoked".
        env = serve_env(database, CASEWORK_TOKEN_CACHE_SECONDS="0")
        async with (
            casework_serve_process(env) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30) as client,
        ):
            api = Api(client)
            writer = Writer(api, tokens)
            await set_up(api, tokens, writer)
            decision_cursor, event_cursor = (
                int(max(ids)) for ids in await table_ids(database, 0, 0)
            )

            async with graphql_socket(served.url, tokens.integration) as socket:
                streams = Streams(
                    socket,
                    await socket.subscribe(
                        DECISION_EVENTS, queue="kyc", after=str(decision_cursor)
                    ),
                    await socket.subscribe(
                        EXCEPTION_EVENTS, workflow=WORKFLOW, after=str(event_cursor)
                    ),
                    [],
                    [],
                )
                await writer.phase()
                await streams.read_until(PER_PHASE, PER_PHASE, within=15)

                await outage(postgres, served, client, outage_seconds, tokens.reviewer)
                # Right after the restart: the streams may still be waiting to look again.
                await writer.phase()
                await streams.read_until(2 * PER_PHASE, 2 * PER_PHASE, within=30)

                await wait_for_readiness(client, 200, within=RECOVER_WITHIN_SECONDS)
                await writer.phase()
                await streams.read_until(3 * PER_PHASE, 3 * PER_PHASE, within=15)

                decisions, events = await table_ids(database, decision_cursor, event_cursor)
                assert len(decisions) == len(events) == 3 * PER_PHASE
                # Every row of the table, each once, in the order of the table's ids (the
                # writes here are one after the other).
                assert streams.decisions == sorted(decisions, key=int)
                assert streams.exceptions == sorted(events, key=int)
                # Nothing more is on its way.
                for operation in (streams.decisions_op, streams.exceptions_op):
                    with pytest.raises(TimeoutError):
                        await socket.message(operation, 1.5)
                assert socket.closed is None, socket.closed
                assert (await health(client))["listener"]["connected"] is True

        # The process has exited: its log is complete.
        tracebacks = [n for n, line in enumerate(served.log) if line.startswith("Traceback")]
        assert not tracebacks, "".join(served.log[tracebacks[0] - 3 :]) if tracebacks else ""
        assert len(log_lines(served, "postgres listener: lost")) == 1, "".join(served.log)
        assert len(log_lines(served, "postgres listener: back")) == 1, "".join(served.log)
        # The streams said so once each way, however many reads failed.
        lost, back = log_lines(served, STREAM_LOST), log_lines(served, STREAM_BACK)
        assert (len(lost), len(back)) == (1, 1), "".join(served.log)


async def test_the_listener_names_itself_in_pg_stat_activity(
    test_database: TestDatabase, owner_conn: asyncpg.Connection
) -> None:
    async with (
        casework_serve_process(serve_env(test_database)) as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        pid = (await health(client))["listener"]["backend_pid"]
        row = await owner_conn.fetchrow(
            "SELECT application_name, usename FROM pg_stat_activity WHERE pid = $1", pid
        )
        assert row is not None, pid
        assert (row["application_name"], row["usename"]) == (APPLICATION_NAME, "casework_app")
        assert APPLICATION_NAME == "casework-listener"
        # Only the listener carries the name: the pool's connections do not.
        named = await owner_conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = $2",
            APPLICATION_NAME,
            test_database.name,
        )
        assert [record["pid"] for record in named] == [pid]
