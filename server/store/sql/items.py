"""The statements of db/queries/items.sql, as symbols.

Generated from db/queries/items.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _items_upsert(
    *,
    queue: Any,
    external_keys: Any,
    priorities: Any,
    payloads: Any,
    evidence_hashes: Any,
    actor: Any,
    actor_role: Any,
) -> None: ...


ITEMS_UPSERT = Query("items_upsert", _items_upsert)
"""db/queries/items.sql:1

Idempotent on (origin queue, external key). A key seen before keeps its item; if the
item is still pending and the payload differs, the payload is replaced (a re-upload) and
any decision under the current lease will be refused with EvidenceChanged.
Each item created or re-uploaded is written to its timeline (`item_events`, kind
`enqueued` or `reuploaded`, with the evidence hash), by the enqueuing token's user and
role; an enqueue that changes nothing writes nothing.
"""


def _items_get_by_external_keys(
    *,
    origin_queue: Any,
    external_keys: Any,
) -> None: ...


ITEMS_GET_BY_EXTERNAL_KEYS = Query("items_get_by_external_keys", _items_get_by_external_keys)
"""db/queries/items.sql:46"""


def _items_get_by_ids(
    *,
    ids: Any,
) -> None: ...


ITEMS_GET_BY_IDS = Query("items_get_by_ids", _items_get_by_ids)
"""db/queries/items.sql:51"""


def _items_get_pages(
    *,
    queues: Any,
    after_id: Any,
    state: Any,
    page_size: Any,
) -> None: ...


ITEMS_GET_PAGES = Query("items_get_pages", _items_get_pages)
"""db/queries/items.sql:54

One page of items for each queue of :queues (a dashboard's), oldest id first, filtered by
derived state. :state is 'pending', 'leased', 'decided' or NULL for all.
"""


def _item_claim_next(
    *,
    queue: Any,
    actor_role: Any,
    actor: Any,
) -> None: ...


ITEM_CLAIM_NEXT = Query("item_claim_next", _item_claim_next)
"""db/queries/items.sql:78

Takes the first claimable item of a queue under a fresh lease. An expired lease counts
as an abandonment; the abandonment that reaches max_abandons escalates the item instead
of leasing it (`escalated` is then true and the caller claims again).
Sends one hint (casework_hint): `claimed`, or `escalated` with the queue the item left.
Only a queue's holder role claims there: reviewers, or approvers in an approval queue.
An overdue exception waiting for review belongs to its escalation owner: it is never
handed out from its old owner's queue, and `overdue_exceptions` tells the caller to move
such exceptions (exceptions_escalate_overdue), so no cron job is needed, and a queue
without overdue exceptions pays for none of it.
A lapsed lease the claim takes over is written to the timeline (`item_events`, kind
`lapsed`, at the moment it ran out, with its owner); a claim of a fresh item writes none.
"""
