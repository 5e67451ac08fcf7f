"""A DBOS workflow that waits for a Casework decision.

DBOS keeps the workflow's progress in PostgreSQL: the step that asks for the review runs
once, and the workflow then sleeps in `DBOS.recv` (durably: a restart resumes it there)
until the decision arrives or its timeout passes. The webhook receiver hands each decision
on with `DBOS.send`, its idempotency key the decision id: a decision delivered twice, even
at the same moment, is one message, so the workflow resumes exactly once and its action
step runs once. A timeout is its own outcome (`timed_out`), never an approval; the item
still waits in its queue, and get_decision reads it later.

    DBOS(config={"name": "refunds", "system_database_url": DSN}); DBOS.launch()
    configure(reviews.ask, carry_out)
    with SetWorkflowID("refund-77"):
        handle = await DBOS.start_workflow_async(refund_workflow, "77", 3600)
    app = decision_receiver(secret, deliver_decision)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dbos import DBOS

QUEUE = "refunds"
TOPIC = "casework.decision"
# The external key of an item a workflow asked for: this prefix and the workflow id.
KEY_PREFIX = "dbos:"

Ask = Callable[..., Awaitable[str]]
CarryOut = Callable[[str, dict[str, Any]], Awaitable[str]]


class _Hooks:
    ask: Ask | None = None
    carry_out: CarryOut | None = None


def configure(ask: Ask, carry_out: CarryOut) -> None:
    """How the workflow asks (McpReviews.ask) and what it does with a decision."""
    _Hooks.ask, _Hooks.carry_out = ask, carry_out


@DBOS.step()
async def request_review(order_id: str, key: str) -> str:
    assert _Hooks.ask is not None, "call configure() first"
    # Idempotent on the key as well: a step retried after a crash gets the same item.
    return await _Hooks.ask(QUEUE, f"Refund order {order_id}?", {"order_id": order_id}, key=key)


@DBOS.step()
async def act(order_id: str, decision: dict[str, Any]) -> str:
    assert _Hooks.carry_out is not None, "call configure() first"
    return await _Hooks.carry_out(order_id, decision)


@DBOS.workflow()
async def refund_workflow(order_id: str, timeout_seconds: float) -> dict[str, Any]:
    item_id = await request_review(order_id, f"{KEY_PREFIX}{DBOS.workflow_id}")
    decision = await DBOS.recv_async(TOPIC, timeout_seconds=timeout_seconds)
    if decision is None:
        # Nobody decided in time: say so, and do nothing a decision would have done.
        return {"status": "timed_out", "item_id": item_id}
    outcome = await act(order_id, decision)
    return {"status": "decided", "verdict": decision["verdict"], "outcome": outcome}


async def deliver_decision(decision: dict[str, Any]) -> None:
    """The receiver's hand-over: one message per decision, whatever the deliveries."""
    key = decision["externalKey"]
    if not key.startswith(KEY_PREFIX):
        return
    await DBOS.send_async(
        key.removeprefix(KEY_PREFIX),
        decision,
        TOPIC,
        idempotency_key=f"casework-decision-{decision['decisionId']}",
    )
