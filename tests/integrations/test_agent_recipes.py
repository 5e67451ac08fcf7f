"""The agent recipes (examples/agents), end to end: the agent asks through `casework mcp`
(HTTP), a reviewer decides, the apply worker of a served Casework posts the decision webhook
to the recipe's receiver, and the paused workflow resumes. Delivered again (at once, and
twice concurrently), the decision resumes nothing more: the action runs exactly once."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from server.app import create_app
from server.config import REPO_ROOT
from server.domain.failures import QueueEmpty
from server.domain.model import Claim, EffectKind, Principal, Verdict
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.leases import claim_next
from server.domain.review.queues import (
    Effect,
    QueueSettings,
    configure_queue,
    define_reason_code,
)
from server.signatures import new_secret, standard_headers
from server.store.database import Database
from tests.conftest import ADMIN, TestDatabase, reviewer
from tests.integrations.mcp_support import BOUND_SECONDS, Tokens, served_http, tokens

__all__ = ["tokens"]  # a fixture

EXAMPLES = REPO_ROOT / "examples" / "agents"


def example(name: str) -> ModuleType:
    """A recipe module, loaded from its file as a reader would run it."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def serving(app: ASGIApp) -> AsyncIterator[str]:
    """`app` under uvicorn on a free port of 127.0.0.1: yields its base URL."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    serving_task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving_task, BOUND_SECONDS)
        listening.close()


@asynccontextmanager
async def casework_with_worker(test_database: TestDatabase) -> AsyncIterator[None]:
    """The served API's runtime with its apply worker, which posts decision webhooks."""
    app = create_app(test_database.app_dsn, dev=False, run_worker=True)
    async with app.router.lifespan_context(app):
        yield


async def refunds_queue(db: Database, receiver_url: str, secret: str) -> None:
    configured = await configure_queue(
        db,
        ADMIN,
        QueueSettings("refunds", effect=Effect(EffectKind.WEBHOOK, receiver_url, secret)),
    )
    assert not hasattr(configured, "message"), configured
    for code, verdict in (("policy_ok", Verdict.APPROVE), ("out_of_policy", Verdict.REJECT)):
        defined = await define_reason_code(
            db, ADMIN, queue="refunds", code=code, label=code, verdicts=[verdict]
        )
        assert not hasattr(defined, "message"), defined


async def decide_refund(db: Database, verdict: Verdict, reason: str) -> None:
    rita = reviewer("rita", "refunds")
    claim = await claim_when_enqueued_in(db, rita)
    decided = await submit_decision(
        db,
        rita,
        DecisionInput(
            item_id=str(claim.item.id),
            lease_token=str(claim.lease_token),
            verdict=verdict,
            reason_code=reason,
            evidence_hash=claim.evidence_hash,
        ),
    )
    assert not hasattr(decided, "message"), decided


async def claim_when_enqueued_in(db: Database, principal: Principal) -> Claim:
    async with asyncio.timeout(BOUND_SECONDS):
        while True:
            claimed = await claim_next(db, principal, "refunds")
            if not isinstance(claimed, QueueEmpty):
                assert isinstance(claimed, Claim), claimed
                return claimed
            await asyncio.sleep(0.05)


async def deliver_again(receiver_url: str, secret: str, decision: dict[str, Any]) -> int:
    """The same decision once more, as a redelivery carries it: same webhook-id, signed."""
    body = json.dumps(decision).encode()
    headers = standard_headers(decision["decisionId"], body, (secret,))
    async with httpx.AsyncClient() as client:
        response = await client.post(
            receiver_url + "/",
            content=body,
            headers={**headers, "Content-Type": "application/json"},
        )
    return response.status_code


async def test_langgraph_interrupt_resumed_once(
    test_database: TestDatabase, tokens: Tokens, db: Database
) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    agent = example("casework_agent")
    recipe = example("langgraph_review")
    secret = new_secret()
    carried_out: list[tuple[str, str]] = []
    resumed: list[bool] = []
    delivered = asyncio.Event()

    async def carry_out(order_id: str, decision: dict[str, Any]) -> str:
        carried_out.append((order_id, decision["verdict"]))
        return f"refund {order_id}: {decision['verdict']}"

    async with (
        await AsyncConnection.connect(
            test_database.owner_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn,
        served_http(test_database) as mcp_url,
        casework_with_worker(test_database),
    ):
        checkpointer = AsyncPostgresSaver(conn)
        await checkpointer.setup()
        reviews = agent.McpReviews(mcp_url, tokens.agent)
        graph = recipe.build_graph(reviews.ask, carry_out, checkpointer)

        async def on_decision(decision: dict[str, Any]) -> None:
            resumed.append(
                await recipe.resume_with_decision(graph, test_database.owner_dsn, decision)
            )
            delivered.set()
            last.append(decision)

        last: list[dict[str, Any]] = []
        async with serving(agent.decision_receiver(secret, on_decision)) as receiver_url:
            await refunds_queue(db, receiver_url + "/", secret)
            paused = await graph.ainvoke({"order_id": "77"}, recipe.thread("refund-77"))
            assert "__interrupt__" in paused
            assert carried_out == []

            await decide_refund(db, Verdict.APPROVE, "policy_ok")
            # The apply worker posts the decision webhook; the receiver resumes the graph.
            await asyncio.wait_for(delivered.wait(), BOUND_SECONDS)
            assert carried_out == [("77", "APPROVE")]
            assert resumed == [True]

            # Delivered again, and twice at once: nothing more runs.
            assert await deliver_again(receiver_url, secret, last[0]) == 200
            codes = await asyncio.gather(
                *(deliver_again(receiver_url, secret, last[0]) for _ in range(2))
            )
            assert codes == [200, 200]
            assert carried_out == [("77", "APPROVE")]
            assert resumed == [True, False, False, False]
            final = await graph.aget_state(recipe.thread("refund-77"))
            assert final.values["outcome"] == "refund 77: APPROVE"


@pytest.mark.parametrize("copies", [2])
async def test_langgraph_concurrent_first_deliveries(
    test_database: TestDatabase, tokens: Tokens, db: Database, copies: int
) -> None:
    """The first deliveries race each other (a retry overlapping a slow first attempt):
    one resumes, the others find nothing left to do."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    agent = example("casework_agent")
    recipe = example("langgraph_review")
    carried_out: list[str] = []

    async def carry_out(order_id: str, decision: dict[str, Any]) -> str:
        # Slow enough that a second resume, were it let through, would overlap this one.
        await asyncio.sleep(0.2)
        carried_out.append(order_id)
        return "done"

    async with (
        await AsyncConnection.connect(
            test_database.owner_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn,
        served_http(test_database) as mcp_url,
    ):
        checkpointer = AsyncPostgresSaver(conn)
        await checkpointer.setup()
        reviews = agent.McpReviews(mcp_url, tokens.agent)
        graph = recipe.build_graph(reviews.ask, carry_out, checkpointer)
        # No webhook here: the test delivers the decision itself, concurrently.
        await refunds_queue(db, "http://127.0.0.1:9/unused", new_secret())
        await graph.ainvoke({"order_id": "78"}, recipe.thread("refund-78"))
        await decide_refund(db, Verdict.REJECT, "out_of_policy")
        item_id = (await graph.aget_state(recipe.thread("refund-78"))).tasks[0].interrupts[0]
        outcome = await reviews.decision(item_id.value["casework_item_id"])
        decision = {
            "decisionId": outcome["decision"]["decision_id"],
            "itemId": outcome["item_id"],
            "externalKey": outcome["external_key"],
            "verdict": outcome["decision"]["verdict"].upper(),
        }
        results = await asyncio.gather(
            *(
                recipe.resume_with_decision(graph, test_database.owner_dsn, decision)
                for _ in range(copies)
            )
        )
    assert sorted(results) == [False] * (copies - 1) + [True]
    assert carried_out == ["78"]


def test_examples_import_nothing_from_the_server() -> None:
    """A recipe is what an integrator copies: it may not lean on Casework's own code."""
    for path in Path(EXAMPLES).glob("*.py"):
        text = path.read_text()
        assert "from server" not in text
        assert "import server" not in text, path


@pytest.fixture
async def dbos_recipe(test_database: TestDatabase) -> AsyncIterator[ModuleType]:
    """DBOS launched on the test database (its system tables in a schema of their own),
    destroyed after the test: DBOS is one instance per process. DBOS makes its own thread
    pool the running loop's default executor and shuts it down on destroy: the suite's loop
    (shared by every test of the session) gets a fresh one back, or every later
    asyncio.to_thread would fail."""
    from dbos import DBOS

    loop = asyncio.get_running_loop()
    recipe = example("dbos_review")
    DBOS(config={"name": "casework-refunds", "system_database_url": test_database.owner_dsn})
    DBOS.launch()
    try:
        yield recipe
    finally:
        DBOS.destroy(destroy_registry=True)
        loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))


async def test_dbos_workflow_resumed_once(
    test_database: TestDatabase, tokens: Tokens, db: Database, dbos_recipe: ModuleType
) -> None:
    from dbos import DBOS, SetWorkflowID

    agent = example("casework_agent")
    recipe = dbos_recipe
    secret = new_secret()
    carried_out: list[tuple[str, str]] = []
    received: list[dict[str, Any]] = []

    async def carry_out(order_id: str, decision: dict[str, Any]) -> str:
        carried_out.append((order_id, decision["verdict"]))
        return f"refund {order_id}: {decision['verdict']}"

    async def on_decision(decision: dict[str, Any]) -> None:
        await recipe.deliver_decision(decision)
        received.append(decision)

    async with (
        served_http(test_database) as mcp_url,
        casework_with_worker(test_database),
        serving(agent.decision_receiver(secret, on_decision)) as receiver_url,
    ):
        await refunds_queue(db, receiver_url + "/", secret)
        recipe.configure(agent.McpReviews(mcp_url, tokens.agent).ask, carry_out)
        with SetWorkflowID("refund-90"):
            handle = await DBOS.start_workflow_async(recipe.refund_workflow, "90", BOUND_SECONDS)
        await decide_refund(db, Verdict.REJECT, "out_of_policy")
        result = await asyncio.wait_for(handle.get_result(), BOUND_SECONDS)
        assert result["status"] == "decided"
        assert result["verdict"] == "REJECT"
        assert carried_out == [("90", "REJECT")]

        # The same decision again, once and then twice at once: one message, one action.
        assert received, "the apply worker's delivery reached the receiver"
        assert await deliver_again(receiver_url, secret, received[0]) == 200
        codes = await asyncio.gather(
            *(deliver_again(receiver_url, secret, received[0]) for _ in range(2))
        )
        assert codes == [200, 200]
        assert carried_out == [("90", "REJECT")]


async def test_dbos_duplicate_deliveries_before_the_wait(
    test_database: TestDatabase, tokens: Tokens, db: Database, dbos_recipe: ModuleType
) -> None:
    """Deliveries that race each other, and a timeout that is not an approval."""
    from dbos import DBOS, SetWorkflowID

    agent = example("casework_agent")
    recipe = dbos_recipe
    carried_out: list[str] = []

    async def carry_out(order_id: str, decision: dict[str, Any]) -> str:
        carried_out.append(order_id)
        return "done"

    async with served_http(test_database) as mcp_url:
        await refunds_queue(db, "http://127.0.0.1:9/unused", new_secret())
        reviews = agent.McpReviews(mcp_url, tokens.agent)
        recipe.configure(reviews.ask, carry_out)
        # Nobody decides: the workflow ends timed_out, and nothing is carried out.
        with SetWorkflowID("refund-91"):
            waiting = await DBOS.start_workflow_async(recipe.refund_workflow, "91", 0.5)
        timed_out = await asyncio.wait_for(waiting.get_result(), BOUND_SECONDS)
        assert timed_out["status"] == "timed_out"
        assert carried_out == []

        with SetWorkflowID("refund-92"):
            handle = await DBOS.start_workflow_async(recipe.refund_workflow, "92", BOUND_SECONDS)
        item_id = await decide_refund_item(db, "dbos:refund-92", Verdict.APPROVE, "policy_ok")
        outcome = await reviews.decision(item_id)
        decision = {
            "decisionId": outcome["decision"]["decision_id"],
            "itemId": outcome["item_id"],
            "externalKey": outcome["external_key"],
            "verdict": outcome["decision"]["verdict"].upper(),
        }
        await asyncio.gather(*(recipe.deliver_decision(decision) for _ in range(3)))
        result = await asyncio.wait_for(handle.get_result(), BOUND_SECONDS)
    assert result["status"] == "decided"
    assert carried_out == ["92"]


async def decide_refund_item(db: Database, key: str, verdict: Verdict, reason: str) -> str:
    """As decide_refund, for the item of `key` (the queue may hold a timed-out one first)."""
    rita = reviewer("rita", "refunds")
    async with asyncio.timeout(BOUND_SECONDS):
        while True:
            claim = await claim_when_enqueued_in(db, rita)
            if claim.item.external_key == key:
                break
    decided = await submit_decision(
        db,
        rita,
        DecisionInput(
            item_id=str(claim.item.id),
            lease_token=str(claim.lease_token),
            verdict=verdict,
            reason_code=reason,
            evidence_hash=claim.evidence_hash,
        ),
    )
    assert not hasattr(decided, "message"), decided
    return str(claim.item.id)
