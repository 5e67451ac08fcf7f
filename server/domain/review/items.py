"""Enqueueing review items, idempotently on the caller's external key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import PRIORITY_LIMIT, EnqueuedItem, Item, Principal, Role
from server.domain.parsing import MAX_VALUE_DEPTH, check_instant, nested_deeper_than
from server.domain.privacy import intake
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import current_policy
from server.domain.review.evidence import MAX_PAYLOAD_BYTES, canonical_json, evidence_hash
from server.domain.review.queues import require_queue
from server.store import sql
from server.store.database import Database

MAX_BATCH = 1000
# The payloads of one call together, in canonical form: 64 full-size payloads. The largest
# legal call must fit the HTTP body limit (DEFAULT_MAX_BODY_BYTES in server/config.py says
# how), and MAX_BATCH payloads of 64 KiB each (64 MiB) would not.
MAX_BATCH_PAYLOAD_BYTES = 64 * MAX_PAYLOAD_BYTES
MAX_EXTERNAL_KEY = 200


@dataclass(frozen=True)
class NewItem:
    external_key: str
    payload: Any
    priority: int = 0
    # Its own due time; None: the queue's (server/domain/review/due.py). One in the past is
    # allowed: a deadline the sender knows has passed is still the deadline.
    due_at: datetime | None = None
    # The integration's id of the person or company the data is about: the unit of erasure
    # and retention on a queue with a privacy policy (required there), ignored elsewhere.
    subject_ref: str | None = None


def _check_item(index: int, item: NewItem) -> tuple[str, int, InvalidInput | None]:
    """Returns the evidence hash and the payload's canonical size, or what is wrong."""
    where = f"items[{index}]"
    if not 1 <= len(item.external_key) <= MAX_EXTERNAL_KEY:
        return (
            "",
            0,
            InvalidInput(
                f"{where}.externalKey must be 1 to {MAX_EXTERNAL_KEY} characters",
                f"{where}.externalKey",
            ),
        )
    if not -PRIORITY_LIMIT <= item.priority <= PRIORITY_LIMIT:
        return (
            "",
            0,
            InvalidInput(
                f"{where}.priority must be between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}",
                f"{where}.priority",
            ),
        )
    if problem := check_instant(item.due_at, f"{where}.dueAt"):
        return "", 0, problem
    if not isinstance(item.payload, dict):
        return "", 0, InvalidInput(f"{where}.payload must be a JSON object", f"{where}.payload")
    if nested_deeper_than(item.payload, MAX_VALUE_DEPTH):
        return (
            "",
            0,
            InvalidInput(
                f"{where}.payload nests deeper than {MAX_VALUE_DEPTH} levels", f"{where}.payload"
            ),
        )
    try:
        size = len(canonical_json(item.payload))
    except ValueError as error:
        return (
            "",
            0,
            InvalidInput(f"{where}.payload is not valid JSON: {error}", f"{where}.payload"),
        )
    if size > MAX_PAYLOAD_BYTES:
        return (
            "",
            0,
            InvalidInput(
                f"{where}.payload is {size} bytes in canonical form; the limit is "
                f"{MAX_PAYLOAD_BYTES} bytes (64 KiB). Store large evidence elsewhere and "
                "reference it.",
                f"{where}.payload",
            ),
        )
    return evidence_hash(item.payload), size, None


async def enqueue_items(
    db: Database,
    principal: Principal,
    queue: str,
    items: list[NewItem],
    keyring: Keyring | None = None,
) -> list[EnqueuedItem] | NotPermitted | InvalidInput:
    """All or nothing: one bad item refuses the whole batch. On a queue with a privacy
    policy, each payload is split by it first (server/domain/privacy/intake.py)."""
    if principal.role is not Role.INTEGRATION:
        return NotPermitted("only an integration token may enqueue items")
    if not 1 <= len(items) <= MAX_BATCH:
        return InvalidInput(f"send between 1 and {MAX_BATCH} items per call", "items")
    hashes = []
    seen: set[str] = set()
    total = 0
    for index, item in enumerate(items):
        digest, size, problem = _check_item(index, item)
        if problem:
            return problem
        total += size
        if total > MAX_BATCH_PAYLOAD_BYTES:
            return InvalidInput(
                f"the payloads of items[0] to items[{index}] are {total} bytes in canonical "
                f"form; one call carries at most {MAX_BATCH_PAYLOAD_BYTES} bytes (4 MiB) of "
                "payloads: send the rest in another call",
                "items",
            )
        if item.external_key in seen:
            return InvalidInput(
                f"items[{index}].externalKey {item.external_key!r} appears twice in this batch",
                f"items[{index}].externalKey",
            )
        seen.add(item.external_key)
        hashes.append(digest)
    target = await require_queue(db, principal, queue)
    if isinstance(target, NotPermitted | InvalidInput):
        return target
    policy = await current_policy(db, queue)
    payloads = [item.payload for item in items]
    prepared: list[intake.PreparedItem] = []
    if policy is not None:
        for index, item in enumerate(items):
            split = await intake.prepare(
                db, keyring, policy, index, item.external_key, item.subject_ref, item.payload
            )
            if isinstance(split, InvalidInput):
                return split
            prepared.append(split)
        payloads = [p.public_payload for p in prepared]
        hashes = [p.evidence_hash for p in prepared]
    keys = [item.external_key for item in items]
    async with db.transaction() as tx:
        changed = await tx.fetch(
            sql.items.ITEMS_UPSERT,
            queue=queue,
            external_keys=keys,
            priorities=[item.priority for item in items],
            payloads=payloads,
            evidence_hashes=hashes,
            # Who enqueued, for the items' timelines.
            **principal.actor(),
            due_ats=[item.due_at for item in items],
            subject_refs=[p.subject_ref for p in prepared] if prepared else [None] * len(items),
            policy_version=None if policy is None else policy.version,
        )
        rows = await tx.fetch(
            sql.items.ITEMS_GET_BY_EXTERNAL_KEYS, origin_queue=queue, external_keys=keys
        )
        by_key = {row["external_key"]: Item.from_row(row) for row in rows}
        written = {row["external_key"] for row in changed}
        stored = [p for p in prepared if p.external_key in written]
        await intake.store_fields(tx, stored, [by_key[p.external_key].id for p in stored])
    created = {row["external_key"]: row["created"] for row in changed}
    dropped = {p.external_key: p.dropped for p in prepared}
    return [
        EnqueuedItem(
            item=by_key[key],
            created=created.get(key, False),
            evidence_updated=key in created and not created[key],
            dropped_paths=dropped.get(key, ()),
        )
        for key in keys
    ]
