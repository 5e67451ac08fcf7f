"""A hint longer than NOTIFY takes (8000 bytes) is sent cut, and every subscriber resyncs
(db/migrations/0030_notify_payload_cap.sql): the write that made it goes through.

Before migration 0030, pg_notify raised "payload string too long" and the statement failed
with it: an overdue pass moving exceptions of many workflows with long names made the
claim that triggered it fail.
"""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest

from server.domain.exceptions.actions import Raised, RaiseInput, raise_exception
from server.domain.exceptions.records import Consequence, ExceptionAction
from server.domain.exceptions.workflows import (
    ReasonDefinition,
    WorkflowSettings,
    configure_workflow,
    define_exception_reason,
)
from server.domain.model import Principal, Role
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue
from server.events.channels import CHANNEL, MAX_PAYLOAD_BYTES, parse_event
from server.events.listener import PostgresListener
from server.events.live import LiveUpdates
from server.events.subscriber import Inbox, Resync
from server.store.database import Database
from tests.conftest import ADMIN, TestDatabase, closing

WAIT_SECONDS = 10
# Names at their limit (queues and workflows: 63 characters).
NAME_LIMIT = 63
OWNER_QUEUE = "supplier-ops"
APPROVAL_QUEUE = "supplier-approvals"
ERP = Principal("erp-onboarding", Role.INTEGRATION, frozenset())
SAM = Principal("sam", Role.REVIEWER, frozenset({OWNER_QUEUE}))


def long_name(prefix: str, n: int) -> str:
    return f"{prefix}{n:03}".ljust(NAME_LIMIT, "x")


def payload_of(size: int) -> str:
    """A hint of exactly `size` bytes, as casework_hint writes them."""
    head = {"k": "exception", "q": OWNER_QUEUE, "ws": [""]}
    padding = size - len(json.dumps(head, separators=(",", ":")))
    payload = json.dumps({**head, "ws": ["w" * padding]}, separators=(",", ":"))
    assert len(payload.encode()) == size
    return payload


@pytest.mark.parametrize(
    ("size", "cut"), [(MAX_PAYLOAD_BYTES, False), (MAX_PAYLOAD_BYTES + 1, True)]
)
async def test_a_hint_at_the_limit_goes_whole_and_one_byte_over_goes_cut(
    test_database: TestDatabase, size: int, cut: bool
) -> None:
    received: asyncio.Queue[str] = asyncio.Queue()
    async with (
        closing(asyncpg.connect(test_database.app_dsn)) as listener,
        closing(asyncpg.connect(test_database.app_dsn)) as writer,
    ):
        await listener.add_listener(CHANNEL, lambda *args: received.put_nowait(args[-1]))
        sent = payload_of(size)
        returned = await writer.fetchval("SELECT casework_notify($1)", sent)
        delivered = await asyncio.wait_for(received.get(), WAIT_SECONDS)
    # What NOTIFY carried is what the statement returned (what Redis would carry).
    assert delivered == returned
    event = parse_event(delivered)
    assert event is not None
    assert (event.kind, event.queue, event.cut) == ("exception", OWNER_QUEUE, cut)
    if cut:
        assert json.loads(delivered) == {"k": "exception", "q": OWNER_QUEUE, "cut": True}
    else:
        assert delivered == sent
        assert event.workflows == tuple(json.loads(sent)["ws"])


async def exceptions_in_many_long_named_workflows(db: Database, count: int) -> list[str]:
    """`count` workflows, each with one reason escalating to a queue of its own, all names
    at their limit, and one exception raised in each (owned by OWNER_QUEUE)."""
    for queue in (OWNER_QUEUE, APPROVAL_QUEUE):
        assert not hasattr(await configure_queue(db, ADMIN, QueueSettings(queue)), "message")
    workflows = []
    for n in range(count):
        workflow, escalation = long_name("wf", n), long_name("esc", n)
        assert not hasattr(await configure_queue(db, ADMIN, QueueSettings(escalation)), "message")
        configured = await configure_workflow(db, ADMIN, WorkflowSettings(workflow, APPROVAL_QUEUE))
        assert not hasattr(configured, "message"), configured
        reason = ReasonDefinition(
            workflow=workflow,
            code="entity_mismatch",
            label="Document names another legal entity",
            owner_role=OWNER_QUEUE,
            escalation_role=escalation,
            allowed_actions=[ExceptionAction.CLOSE_EXCEPTION],
            due_seconds=dict.fromkeys(Consequence, 3600),
        )
        defined = await define_exception_reason(db, ADMIN, reason)
        assert not hasattr(defined, "message"), defined
        raised = await raise_exception(
            db,
            ERP,
            RaiseInput(
                workflow=workflow,
                source_record_id=f"SUP-{n}",
                reason_code="entity_mismatch",
                detail="The certificate names another legal entity.",
                consequence=Consequence.HIGH,
                completed_steps=[],
                evidence=[],
                blocked_step="verify_legal_entity",
            ),
        )
        assert isinstance(raised, Raised), raised
        workflows.append(workflow)
    return workflows


async def test_an_overdue_pass_whose_hint_is_too_long_still_claims_and_resyncs_subscribers(
    test_database: TestDatabase, db: Database, owner_db: Database
) -> None:
    # 70 workflows and 70 escalation queues of 63 characters: a hint of about 9,300 bytes.
    workflows = await exceptions_in_many_long_named_workflows(db, 70)
    live = LiveUpdates(db, PostgresListener(test_database.app_dsn))
    await live.start()
    try:
        assert live.status().transport.connected
        inbox = Inbox(accepts=lambda event: True)
        with live.hub.subscribe(workflows=(workflows[-1],), inbox=inbox):
            async with closing(asyncpg.connect(test_database.owner_dsn)) as owner:
                await owner.execute("UPDATE exceptions SET due_at = now() - interval '1 day'")
            # The claim runs the overdue pass, which moves every one of them at once.
            await claim_next(db, SAM, OWNER_QUEUE)
            message = await asyncio.wait_for(inbox.next(), WAIT_SECONDS)
        assert message == Resync("a hint was too long to send whole")
    finally:
        await live.stop()
    async with closing(asyncpg.connect(test_database.owner_dsn)) as owner:
        escalated = await owner.fetchval(
            "SELECT count(*) FROM exceptions WHERE escalated_at IS NOT NULL"
        )
    assert escalated == len(workflows)
