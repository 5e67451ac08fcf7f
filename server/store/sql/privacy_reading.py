"""The statements of db/queries/privacy_reading.sql, as symbols.

Generated from db/queries/privacy_reading.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/privacy_reading.sql:1
READING_FIELDS_GET = Query("reading_fields_get", lambda *, item_ids: None)
"""The current fields of items as a reader needs them, in one statement for a page: each
with the item that sealed it (a QA copy shows the fields of the decision it checks), the
policy that split them (that item's origin queue and policy version), whether the subject
is restricted, and for personal values only the ciphertext and the wrapped data key that
opens it. Sensitive ciphertexts are never read here: a reveal reads its one field.
"""

# db/queries/privacy_reading.sql:25
READING_POLICIES_GET = Query("reading_policies_get", lambda *, queues, versions: None)
"""Policy versions by (queue, version), for every item of a page at once."""

# db/queries/privacy_reading.sql:32
REVEAL_TARGET_GET = Query("reveal_target_get", lambda *, path, item_id: None)
"""The item a reveal names, and the field at :path if it has one: its class, the policy that
split it, whether it is erased or its subject restricted. No value: that is read only once
the reveal is logged (reveal_log_and_open).
"""

# db/queries/privacy_reading.sql:46
REVEAL_LOG_AND_OPEN = Query("reveal_log_and_open", lambda *, actor, actor_role, queue, item_id, subject_ref, path, reason, field_class, authentication_id: None)
"""A reveal, logged, then the sealed value and its subject's wrapped key, in one statement:
if the log row cannot be written the statement fails and no value leaves the database.
The value columns are null when the field was erased (or its key shredded) meanwhile.
"""

# db/queries/privacy_reading.sql:74
FIELD_ACCESS_REPORT = Query("field_access_report", lambda *, queue, since, until, limit: None)
"""Reveals in a queue over a window, per reviewer and path (privacy_log_queue_reveals)."""

# db/queries/privacy_reading.sql:83
DISCLOSURES_BY_DECISION_IDS = Query("disclosures_by_decision_ids", lambda *, decision_ids: None)
"""What each decision's reviewer was shown (migration 0027's trigger writes them)."""
