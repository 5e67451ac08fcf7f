"""What the intake's tests share: the order workflow and review queue the dead letters
become, the brokers to run against, configuration written as TOML, and a runner in this
process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

from server.domain.exceptions.records import Consequence, ExceptionAction
from server.domain.exceptions.workflows import (
    ReasonDefinition,
    WorkflowSettings,
    configure_workflow,
    define_exception_reason,
)
from server.domain.model import Principal, Queue, Role
from server.domain.privacy.keys import Keyring
from server.domain.review.queues import QueueSettings, configure_queue
from server.intake.config import IntakeSource, parse_config
from server.intake.runner import IntakeRunner
from server.intake.sources import SourceConfig
from server.store.database import Database
from tests.conftest import ADMIN
from tests.intake.brokers_support import BrokerHarness
from tests.intake.nats_support import NatsHarness
from tests.intake.rabbitmq_support import RabbitMQHarness
from tests.intake.sqs_support import SqsHarness

WORKFLOW = "order_sync"
OWNER_QUEUE = "order-ops"
ESCALATION_QUEUE = "order-leads"
APPROVAL_QUEUE = "order-approvals"
REASON = "order_failed"
OTHER_REASON = "stock_missing"
REVIEW_QUEUE = "order-review"
# What the intake acts as in this process (the CLI resolves a token to the same).
INTAKE = Principal("order-intake", Role.INTEGRATION, frozenset())

WAIT_SECONDS = 30
POLL_SECONDS = 0.02


async def open_rabbitmq(request: pytest.FixtureRequest) -> BrokerHarness:
    url: str = request.getfixturevalue("rabbitmq_url")
    return await RabbitMQHarness.connect(url)


async def open_nats(request: pytest.FixtureRequest) -> BrokerHarness:
    url: str = request.getfixturevalue("nats_url")
    return await NatsHarness.connect(url)


async def open_sqs(request: pytest.FixtureRequest) -> BrokerHarness:
    # Moto's server mode: the only SQS that runs here (docs/integrations.md says so).
    return await SqsHarness.start()


# The brokers an end-to-end test runs against, each opened for the test that asks (a
# factory may ask for session fixtures of its own: a broker it started, say).
HARNESSES: dict[str, Callable[[pytest.FixtureRequest], Awaitable[BrokerHarness]]] = {
    "rabbitmq": open_rabbitmq,
    "nats": open_nats,
    "sqs": open_sqs,
}


async def configure(db: Database, settings: QueueSettings) -> Queue:
    result = await configure_queue(db, ADMIN, settings)
    assert isinstance(result, Queue), result
    return result


async def order_workflow(db: Database) -> str:
    """Workflow order_sync (owner queue order-ops) with two reasons, and the review queue
    order-review."""
    for name in (OWNER_QUEUE, ESCALATION_QUEUE, APPROVAL_QUEUE, REVIEW_QUEUE):
        await configure(db, QueueSettings(name))
    workflow = await configure_workflow(
        db, ADMIN, WorkflowSettings(WORKFLOW, approval_queue=APPROVAL_QUEUE)
    )
    assert not hasattr(workflow, "message"), workflow
    for code in (REASON, OTHER_REASON):
        reason = await define_exception_reason(
            db,
            ADMIN,
            ReasonDefinition(
                workflow=WORKFLOW,
                code=code,
                label=code.replace("_", " "),
                owner_role=OWNER_QUEUE,
                escalation_role=ESCALATION_QUEUE,
                allowed_actions=list(ExceptionAction),
                due_seconds={c: 14_400 for c in Consequence},
            ),
        )
        assert not hasattr(reason, "message"), reason
    return WORKFLOW


def source_table(config: SourceConfig, **extra: Any) -> dict[str, Any]:
    """A [[source]] table for a harness's queues: exceptions of order_sync by default."""
    table: dict[str, Any] = {
        "name": config.name,
        "broker": config.broker.value,
        "url": config.url,
        "dead_letter": config.dead_letter,
        "parking": config.parking,
    }
    if config.options:
        table["options"] = dict(config.options)
    if "queue" not in extra:
        table |= {"workflow": WORKFLOW, "reason_code": REASON}
    return table | extra


def to_toml(tables: list[dict[str, Any]]) -> str:
    """[[source]] tables as TOML (strings, whole numbers and flat inline tables)."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, str):
            return json.dumps(v)
        return str(v)

    return "\n".join(
        "[[source]]\n" + "".join(f"{key} = {value(v)}\n" for key, v in table.items())
        for table in tables
    )


def sources(*tables: dict[str, Any]) -> tuple[IntakeSource, ...]:
    return parse_config({"source": list(tables)}).sources


@asynccontextmanager
async def running(
    db: Database,
    configured: tuple[IntakeSource, ...],
    *,
    principal: Principal = INTAKE,
    keyring: Keyring | None = None,
) -> AsyncIterator[IntakeRunner]:
    """An IntakeRunner draining `configured` in this process, stopped at the end."""

    async def me() -> Principal:
        return principal

    runner = IntakeRunner(db, me, configured, keyring=keyring)
    task = asyncio.create_task(runner.run())
    draining = asyncio.create_task(runner.draining.wait())
    await asyncio.wait({task, draining}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # it failed to start: say why
    try:
        yield runner
    finally:
        runner.stop.set()
        await asyncio.wait_for(task, WAIT_SECONDS)


async def wait_until(check: Callable[[], Awaitable[Any]], *, what: str) -> Any:
    """Polls `check` until it returns something truthy (for rows no signal announces)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while True:
        if result := await check():
            return result
        if loop.time() > deadline:
            raise AssertionError(f"not within {WAIT_SECONDS} s: {what}")
        await asyncio.sleep(POLL_SECONDS)


async def intake_rows(conn: asyncpg.Connection, source: str) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await conn.fetch(
        "SELECT * FROM intake_messages WHERE source = $1 ORDER BY received_at, message_id", source
    )
    return rows


async def rows_reach(conn: asyncpg.Connection, source: str, count: int) -> list[asyncpg.Record]:
    async def enough() -> list[asyncpg.Record] | None:
        rows = await intake_rows(conn, source)
        return rows if len(rows) >= count else None

    rows: list[asyncpg.Record] = await wait_until(
        enough, what=f"{count} intake_messages rows of {source}"
    )
    return rows


def record_ids(rows: list[Mapping[str, Any]]) -> list[str]:
    return sorted(row["source_record_id"] for row in rows)
