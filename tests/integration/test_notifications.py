"""Every state change sends exactly one ids-only notification, small enough for NOTIFY."""

from __future__ import annotations

from server.domain.model import Decision, Item, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import release_lease, renew_lease
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.events.channels import MAX_PAYLOAD_BYTES, Event, parse_event
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, reviewer
from tests.integration.helpers import Listener, claim, claimed_one, decide, enqueue_one


def only_event(payloads: list[str]) -> Event:
    assert len(payloads) == 1, payloads
    event = parse_event(payloads[0])
    assert event is not None, payloads[0]
    return event


async def test_each_step_of_the_loop_notifies_once(
    db: Database, kyc_queue: str, listener: Listener
) -> None:
    alice = reviewer("alice")
    enqueued = only_event(await listener.events_of(enqueue_one(db, kyc_queue, "cust-1")))
    assert (enqueued.kind, enqueued.queue, enqueued.evidence_changed) == ("enqueued", "kyc", ())

    held = await claim(db, alice)
    renewed = only_event(
        await listener.events_of(renew_lease(db, alice, str(held.item.id), str(held.lease_token)))
    )
    assert (renewed.kind, renewed.item_id) == ("renewed", held.item.id)
    released = only_event(
        await listener.events_of(release_lease(db, alice, str(held.item.id), str(held.lease_token)))
    )
    assert (released.kind, released.item_id) == ("released", held.item.id)

    claimed_box: list[object] = []

    async def claim_into_box() -> None:
        claimed_box.append(await claim(db, alice))

    claimed = only_event(await listener.events_of(claim_into_box()))
    assert (claimed.kind, claimed.queue, claimed.item_id) == ("claimed", "kyc", held.item.id)

    decisions: list[Decision] = []

    async def decide_into_box() -> None:
        decisions.append(await decide(db, alice, await claim(db, alice, kyc_queue)))

    await enqueue_one(db, kyc_queue, "cust-2")
    payloads = await listener.events_of(decide_into_box())
    events = [parse_event(payload) for payload in payloads]
    assert [event.kind if event else None for event in events] == ["claimed", "decided"]
    decided = events[-1]
    assert decided is not None
    assert decided.decision_id == decisions[0].id

    overturned = only_event(
        await listener.events_of(
            overturn_decision(db, APPROVER, OverturnInput(str(decisions[0].id), "name_mismatch"))
        )
    )
    assert (overturned.kind, overturned.item_id) == ("overturned", decisions[0].item_id)


async def test_escalation_names_both_queues(
    db: Database, kyc_queue: str, listener: Listener
) -> None:
    alice = reviewer("alice")
    held = await claimed_one(db, kyc_queue, alice)
    event = only_event(
        await listener.events_of(decide(db, alice, held, Verdict.ESCALATE, "needs_senior"))
    )
    assert (event.kind, event.queue, event.from_queue) == ("escalated", "kyc-senior", "kyc")
    assert set(event.queues) == {"kyc", "kyc-senior"}


async def test_the_largest_payload_fits(db: Database, listener: Listener) -> None:
    """A batch re-upload of 1,000 items in a queue with the longest name the schema allows."""
    queue = "q" * 63
    configured = await configure_queue(db, ADMIN, QueueSettings(queue))
    assert not isinstance(configured, Exception)
    defined = await define_reason_code(
        db, ADMIN, queue=queue, code="ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    assert not hasattr(defined, "message")
    keys = [f"key-{n}" for n in range(1000)]
    first = await enqueue_items(db, INTEGRATION, queue, [NewItem(k, {"v": 1}) for k in keys])
    assert isinstance(first, list)

    payloads = await listener.events_of(
        enqueue_items(db, INTEGRATION, queue, [NewItem(k, {"v": 2}) for k in keys])
    )

    event = only_event(payloads)
    assert len(payloads[0].encode()) <= MAX_PAYLOAD_BYTES
    assert event.more is True
    assert len(event.evidence_changed) == 100
    assert set(event.evidence_changed) <= {entry.item.id for entry in first}


async def test_a_refused_write_sends_nothing(
    db: Database, kyc_queue: str, listener: Listener
) -> None:
    item: Item = await enqueue_one(db, kyc_queue, "cust-1")
    alice = reviewer("alice")
    held = await claim(db, alice)
    stranger = "00000000-0000-0000-0000-000000000000"
    assert await listener.events_of(renew_lease(db, alice, str(item.id), stranger)) == []
    assert await listener.events_of(release_lease(db, alice, str(item.id), stranger)) == []
    assert held.item.id == item.id
