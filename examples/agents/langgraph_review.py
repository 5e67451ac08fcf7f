"""LangGraph's interrupt() resumed by a Casework decision.

The graph asks for a review in a node (through `casework mcp`), then pauses with
`interrupt()`; its state is checkpointed in PostgreSQL, so nothing runs while a person
decides, and any process may resume it. The decision arrives by webhook (at least once):
`resume_with_decision` resumes the thread only while it still waits for that very item,
under a per-thread advisory lock, so a decision delivered twice, even at the same moment,
resumes it exactly once. A decision that arrives before the graph paused finds no interrupt
and is ignored; the webhook should then be retried (answer non-2xx) or the graph pick the
outcome up with get_decision when it resumes.

    checkpointer = AsyncPostgresSaver(conn); await checkpointer.setup()
    graph = build_graph(reviews.ask, carry_out, checkpointer)
    await graph.ainvoke({"order_id": "77"}, thread("refund-77"))   # pauses
    ...
    app = decision_receiver(secret, lambda d: resume_with_decision(graph, dsn, d))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

import psycopg
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, RunnableConfig, interrupt

# The external key of an item a graph asked for: this prefix and the thread id.
KEY_PREFIX = "langgraph:"
QUEUE = "refunds"

Ask = Callable[..., Awaitable[str]]
CarryOut = Callable[[str, dict[str, Any]], Awaitable[str]]


class RefundState(TypedDict, total=False):
    order_id: str
    item_id: str
    decision: dict[str, Any]
    outcome: str


def thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def build_graph(ask: Ask, carry_out: CarryOut, checkpointer: Any) -> CompiledStateGraph[Any]:
    async def human_review(state: RefundState, config: RunnableConfig) -> RefundState:
        thread_id = config["configurable"]["thread_id"]
        # On resume LangGraph runs this node again from its start: asking again with the
        # same key returns the same item, so nothing is enqueued twice.
        item_id = await ask(
            QUEUE,
            f"Refund order {state['order_id']}?",
            {"order_id": state["order_id"]},
            key=f"{KEY_PREFIX}{thread_id}",
        )
        decision = interrupt({"casework_item_id": item_id})
        return {"item_id": item_id, "decision": decision}

    async def act(state: RefundState) -> RefundState:
        return {"outcome": await carry_out(state["order_id"], state["decision"])}

    builder = StateGraph(RefundState)
    builder.add_node("human_review", human_review)
    builder.add_node("act", act)
    builder.add_edge(START, "human_review")
    builder.add_edge("human_review", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=checkpointer)


async def resume_with_decision(
    graph: CompiledStateGraph[Any], dsn: str, decision: dict[str, Any]
) -> bool:
    """Resumes the thread that waits for this decision's item; False when none does (not
    a graph's item, already resumed, or not paused yet). Exactly once per thread: the check
    and the resume happen under the thread's advisory lock, and a resumed thread no longer
    waits for the item, so a second delivery finds nothing to do."""
    key = decision["externalKey"]
    if not key.startswith(KEY_PREFIX):
        return False
    thread_id = key.removeprefix(KEY_PREFIX)
    config = thread(thread_id)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as lock:
        await lock.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        try:
            state = await graph.aget_state(config)
            waiting = {
                str(pause.value.get("casework_item_id"))
                for task in state.tasks
                for pause in task.interrupts
                if isinstance(pause.value, dict)
            }
            if str(decision["itemId"]) not in waiting:
                return False
            await graph.ainvoke(Command(resume=decision), config)
            return True
        finally:
            await lock.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
