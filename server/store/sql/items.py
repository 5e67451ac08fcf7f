"""The statements of db/queries/items.sql, as symbols.

Generated from db/queries/items.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/items.sql:1
ITEMS_UPSERT = Query("items_upsert", lambda *, queue, policy_version, external_keys, priorities, payloads, evidence_hashes, due_ats, subject_refs, actor, actor_role: None)
"""Idempotent on (origin queue, external key). A key seen before keeps its item; if the
item is still pending and the payload differs, the payload is replaced (a re-upload) and
any decision under the current lease will be refused with EvidenceChanged.
Each item created or re-uploaded is written to its timeline (`item_events`, kind
`enqueued` or `reuploaded`, with the evidence hash), by the enqueuing token's user and
role; an enqueue that changes nothing writes nothing.
A new item is due at its own :due_ats entry, else when the queue's due time for its
priority says (review_due_seconds), else never; a known key keeps its due time.
On a queue with a privacy policy, :payloads hold only the public and reference values,
:evidence_hashes are the salted field digests' hash, and each item names its subject
(:subject_refs; NULLs elsewhere) and the :policy_version that split it.
"""

# db/queries/items.sql:58
ITEMS_GET_BY_EXTERNAL_KEYS = Query("items_get_by_external_keys", lambda *, origin_queue, external_keys: None)

# db/queries/items.sql:63
ITEMS_GET_BY_IDS = Query("items_get_by_ids", lambda *, ids: None)

# db/queries/items.sql:66
ITEM_IDS_GET_ENQUEUED_BETWEEN = Query("item_ids_get_enqueued_between", lambda *, queue, since, until: None)
"""The items first enqueued to :queue (their origin queue, which never changes) from :since
up to, not including, :until, by their enqueue time (created_at), oldest id first: what
`casework export queue` packs (server/domain/quality/audit.py), read through a cursor.
The window is read first (review_items_created_brin: the window's blocks only), then
sorted: as a cursor's query, a plain ORDER BY id would be planned for its first rows, as
a walk of the whole table in id order (tests/migrations/test_export_plan.py).
"""

# db/queries/items.sql:82
ITEMS_GET_PAGES = Query("items_get_pages", lambda *, queues, after_id, state, page_size: None)
"""One page of items for each queue of :queues (a dashboard's), oldest id first, filtered by
derived state. :state is 'pending', 'leased', 'decided' or NULL for all.
"""

# db/queries/items.sql:106
ITEM_CLAIM_NEXT = Query("item_claim_next", lambda *, queue, actor, actor_role: None)
"""Takes the first claimable item of a queue under a fresh lease. An expired lease counts
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
An escalation is written too (kind `escalated`, by the claimer, with the queues it left
and went to). The claim itself is not: the timeline reads it from the record of how its
lease ended, or from the item while it is held. Both rows come from one call of
casework_claim_timeline (migration 0037), made only when there is one to write: an
INSERT in the statement would be set up on every claim, writing or not.

Claim controls (migration 0014):
- Assigned items come first for their assignee: `mine` walks the caller's own live
assignments in the queue (review_items_assigned), and only when it finds none does
`general` walk the claim index over the items set aside for nobody (`reserved` false:
neither held nor assigned). Neither probe passes a held item or someone else's
assignment, however many there are.
- A hold or an assignment whose time has run out stays set aside until the claim path
clears it (items_end_reservations). While one waits, `general` takes nothing and
`reservations_ended` tells the caller to clear them and claim again, so the item comes
back with its priority on this same claim. The probe skips an ended one that another
statement has locked (one clearing it, most likely): a claim never waits for it, and
never refuses to claim because of one it cannot clear.
- Lease limit: in a queue with max_leases_per_reviewer, `settings` counts the caller's live
leases through casework_live_leases, which serialises one reviewer's claims in the queue
(see migration 0014): of concurrent claims by one reviewer, exactly as many succeed as
the limit leaves room for. At the limit nothing is claimed and `lease_limit_reached`
says so. A queue without a limit never calls it.
- Overdue items, in a queue that names an overdue_queue, belong there: they are never
handed out here, and `overdue_items` tells the caller to move them
(items_escalate_overdue), as with exceptions.
- Four-eyes (migration 0019): an item whose `barred_claimer` is the caller (the first
decider of a decision waiting for second review, the decider of a decision sampled
for QA) is passed over by both probes.
"""
