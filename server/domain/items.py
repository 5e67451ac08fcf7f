"""Enqueueing review items, idempotently on the caller's external key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.domain.evidence import MAX_PAYLOAD_BYTES, canonical_json, evidence_hash
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import EnqueuedItem, Item, Principal, Role
from server.domain.queues import require_queue
from server.store.database import Database

MAX_BATCH = 1000
MAX_EXTERNAL_KEY = 200
PRIORITY_LIMIT = 1_000_000


@dataclass(frozen=True)
class NewItem:
    external_key: str
    payload: Any
    priority: int = 0


def _check_item(index: int, item: NewItem) -> tuple[str, InvalidInput | None]:
    """Returns the evidence hash, or what is wrong with the item."""
    where = f"items[{index}]"
    if not 1 <= len(item.external_key) <= MAX_EXTERNAL_KEY:
        return "", InvalidInput(
            f"{where}.externalKey must be 1 to {MAX_EXTERNAL_KEY} characters",
            f"{where}.externalKey",
        )
    if not -PRIORITY_LIMIT <= item.priority <= PRIORITY_LIMIT:
        return "", InvalidInput(
            f"{where}.priority must be between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}",
            f"{where}.priority",
        )
    if not isinstance(item.payload, dict):
        return "", InvalidInput(f"{where}.payload must be a JSON object", f"{where}.payload")
    try:
        size = len(canonical_json(item.payload))
    except ValueError as error:
        return "", InvalidInput(f"{where}.payload is not valid JSON: {error}", f"{where}.payload")
    if size > MAX_PAYLOAD_BYTES:
        return "", InvalidInput(
            f"{where}.payload is {size} bytes in canonical form; the limit is "
            f"{MAX_PAYLOAD_BYTES} bytes (64 KiB). Store large evidence elsewhere and "
            "reference it.",
            f"{where}.payload",
        )
    return evidence_hash(item.payload), None


async def enqueue_items(
    db: Database, principal: Principal, queue: str, items: list[NewItem]
) -> list[EnqueuedItem] | NotPermitted | InvalidInput:
    """All or nothing: one bad item refuses the whole batch."""
    if principal.role is not Role.INTEGRATION:
        return NotPermitted("only an integration token may enqueue items")
    if not 1 <= len(items) <= MAX_BATCH:
        return InvalidInput(f"send between 1 and {MAX_BATCH} items per call", "items")
    hashes = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        digest, problem = _check_item(index, item)
        if problem:
            return problem
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
    keys = [item.external_key for item in items]
    async with db.transaction() as tx:
        changed = await tx.fetch(
            "items_upsert",
            queue,
            keys,
            [item.priority for item in items],
            [item.payload for item in items],
            hashes,
        )
        rows = await tx.fetch("items_get_by_external_keys", queue, keys)
    created = {row["external_key"]: row["created"] for row in changed}
    by_key = {row["external_key"]: Item.from_row(row) for row in rows}
    return [
        EnqueuedItem(
            item=by_key[key],
            created=created.get(key, False),
            evidence_updated=key in created and not created[key],
        )
        for key in keys
    ]
