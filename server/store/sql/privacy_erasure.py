"""The statements of db/queries/privacy_erasure.sql, as symbols.

Generated from db/queries/privacy_erasure.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/privacy_erasure.sql:1
SUBJECT_LOCK = Query("subject_lock", lambda *, subject_ref: None)
"""A subject, locked: erasures, holds and approvals of one subject queue up behind each other."""

# db/queries/privacy_erasure.sql:8
SUBJECT_ITEMS = Query("subject_items", lambda *, subject_ref, queues: None)
"""The subject's items in the caller's queues (NULL: every queue), with whether personal
values of theirs are left.
"""

# db/queries/privacy_erasure.sql:20
ITEMS_SUBJECTS = Query("items_subjects", lambda *, item_ids: None)
"""Items by id with their subject (NULL: not a policy item)."""

# db/queries/privacy_erasure.sql:27
SUBJECT_SET_RELATIONSHIP_ENDED = Query("subject_set_relationship_ended", lambda *, subject_ref, at, actor, actor_role: None)
"""reportRelationshipEnded: the anchor of `relationship_ended` retention, and its log row
(with the date it replaced, if it was reported before).
"""

# db/queries/privacy_erasure.sql:48
SUBJECT_RESTRICT = Query("subject_restrict", lambda *, at, subject_ref: None)
"""GDPR Art. 18: the subject's data is shown to compliance roles only from now on."""

# db/queries/privacy_erasure.sql:55
HOLD_INSERT = Query("hold_insert", lambda *, subject_ref, item_ids, basis, until, actor, actor_role: None)
"""A hold on a subject or on items, and its log row."""

# db/queries/privacy_erasure.sql:72
HOLD_GET = Query("hold_get", lambda *, hold_id: None)

# db/queries/privacy_erasure.sql:79
HOLD_RELEASE = Query("hold_release", lambda *, hold_id, actor, reason, actor_role: None)
"""Ends a hold (once: a second release inserts nothing), and its log row."""

# db/queries/privacy_erasure.sql:95
HOLDS_LIVE = Query("holds_live", lambda *, item_ids, now: None)
"""The holds that keep any of these items (or their subject) from being erased at :now."""

# db/queries/privacy_erasure.sql:108
RETENTION_OF_ITEMS = Query("retention_of_items", lambda *, item_ids: None)
"""Each item's retention class (the one of the policy version that split it) and when its
period ends: NULL ends_at with a class means the anchor has not happened yet (not decided,
relationship end not reported), so the period has not even started.
"""

# db/queries/privacy_erasure.sql:128
RETENTION_DUE = Query("retention_due", lambda *, now, batch: None)
"""Subjects with items whose retention period ended by :now, personal values left, and no
live hold: what the retention worker erases, a batch at a time.
"""

# db/queries/privacy_erasure.sql:154
ERASURE_REQUEST_INSERT = Query("erasure_request_insert", lambda *, subject_ref, basis, actor, queues, actor_role: None)
"""An erasure request, and its log row."""

# db/queries/privacy_erasure.sql:169
ERASURE_REQUEST_GET = Query("erasure_request_get", lambda *, request_id: None)
"""A request, with its executed outcome (the receipt) if there is one, and its latest
outcome otherwise.
"""

# db/queries/privacy_erasure.sql:183
ERASURE_OUTCOME_INSERT = Query("erasure_outcome_insert", lambda *, request_id, outcome, actor, deferred_basis, deferred_until, receipt, actor_role, subject_ref: None)
"""An outcome of a request, and its log row (erasure_deferred; erasure_approved for an
executed one: the function logged the execution itself).
"""

# db/queries/privacy_erasure.sql:204
ERASURE_DEFERRED_PENDING = Query("erasure_deferred_pending", lambda *, now, batch: None)
"""Requests deferred and not carried out since: the worker looks at each again. Oldest
first; the approver is the one of the latest deferral.
"""

# db/queries/privacy_erasure.sql:221
ERASE_SUBJECT = Query("erase_subject", lambda *, subject_ref, item_ids, queues, request_id, actor, actor_role, reason_kind: None)
"""The one way personal values, salts and keys are destroyed (migration 0028)."""

# db/queries/privacy_erasure.sql:226
RECEIPT_FIELDS = Query("receipt_fields", lambda *, item_ids: None)
"""The fields of items under their current evidence hash: what a receipt shows and an auditor
checks (digests are kept after erasure).
"""

# db/queries/privacy_erasure.sql:236
PRIVACY_LOG_INSERT = Query("privacy_log_insert", lambda *, action, actor, actor_role, subject_ref, reason, detail: None)

# db/queries/privacy_erasure.sql:240
SUBJECT_UNRESTRICT = Query("subject_unrestrict", lambda *, subject_ref: None)
"""An erasure request carried out lifts the subject's restriction, unless another request of
the subject still waits on a deferral: new data of a returning subject is not withheld.
"""
