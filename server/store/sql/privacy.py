"""The statements of db/queries/privacy.sql, as symbols.

Generated from db/queries/privacy.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/privacy.sql:1
POLICY_GET_CURRENT = Query("policy_get_current", lambda *, queue: None)
"""The policy in force on a queue, if it has one."""

# db/queries/privacy.sql:8
POLICY_GET_VERSION = Query("policy_get_version", lambda *, queue, version: None)

# db/queries/privacy.sql:13
SUBJECT_ENSURE = Query("subject_ensure", lambda *, subject_ref: None)

# db/queries/privacy.sql:17
SUBJECT_KEY_GET_CURRENT = Query("subject_key_get_current", lambda *, subject_ref: None)
"""The newest data key of a subject that is not shredded."""

# db/queries/privacy.sql:25
SUBJECT_KEY_GET = Query("subject_key_get", lambda *, subject_ref, key_version: None)

# db/queries/privacy.sql:30
SUBJECT_KEY_INSERT = Query("subject_key_insert", lambda *, subject_ref, kek_id, wrapped_key: None)
"""The next version of a subject's key: the first, or the one after an erasure shredded the
rest. Two first enqueues at once: one row wins, the other inserts nothing and reads it.
"""

# db/queries/privacy.sql:41
ITEM_FIELDS_INSERT = Query("item_fields_insert", lambda *, item_ids, evidence_hashes, paths, classes, subject_refs, digests, salts, key_versions, nonces, ciphertexts: None)
"""The fields of items just created or re-uploaded, under their new evidence hash. The same
upload again inserts nothing (its digests, and so its hash, are the same).
"""

# db/queries/privacy.sql:51
ITEM_FIELDS_GET = Query("item_fields_get", lambda *, item_ids: None)
"""The current fields of items, in path order; a QA copy's are those of the decision it
checks (the same evidence hash, on the item decided).
"""

# db/queries/privacy.sql:62
POLICY_INSERT_NEXT = Query("policy_insert_next", lambda *, fields, unlisted, visible, reveal_roles, retention_class, actor, queue, actor_role: None)
"""A queue's next policy version, put in force in the same statement, and logged. Versions
are never rewritten: items keep the version that split them.
"""

# db/queries/privacy.sql:90
RETENTION_CLASS_EXISTS = Query("retention_class_exists", lambda *, name: None)
