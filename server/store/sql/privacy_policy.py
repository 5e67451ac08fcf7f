"""The statements of db/queries/privacy_policy.sql, as symbols.

Generated from db/queries/privacy_policy.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/privacy_policy.sql:1
POLICIES_CURRENT_BY_QUEUES = Query("policies_current_by_queues", lambda *, queues: None)
"""The policy in force on each of these queues that has one (Queue.privacyPolicy)."""

# db/queries/privacy_policy.sql:9
RETENTION_CLASS_DEFINE = Query("retention_class_define", lambda *, name, keep_seconds, anchor, basis, actor, actor_role: None)
"""A retention class, defined once: a name already taken inserts nothing and logs nothing."""

# db/queries/privacy_policy.sql:26
RETENTION_CLASSES_LIST = Query("retention_classes_list", lambda: None)

# db/queries/privacy_policy.sql:31
SUBJECT_KEYS_COUNT_BY_KEK = Query("subject_keys_count_by_kek", lambda: None)
"""The data keys not shredded, by the key-encryption key that wraps them."""

# db/queries/privacy_policy.sql:39
SUBJECT_KEYS_NOT_UNDER = Query("subject_keys_not_under", lambda *, kek_id, after_subject, after_version, batch_size: None)
"""The next batch of data keys (not shredded) wrapped by another KEK than :kek_id, in key
order after (:after_subject, :after_version).
"""

# db/queries/privacy_policy.sql:50
SUBJECT_KEYS_REWRAP = Query("subject_keys_rewrap", lambda *, subject_refs, key_versions, old_kek_ids, new_kek_ids, new_wrapped: None)
"""Data keys wrapped again: only the KEK's id and the wrapped bytes change, and only where
the key is still as it was read (not shredded meanwhile, not re-wrapped by another run).
"""

# db/queries/privacy_policy.sql:64
KEY_ROTATION_LOG = Query("key_rotation_log", lambda *, actor, actor_role, detail: None)
