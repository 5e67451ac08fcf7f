"""The statements of db/queries/privacy_records.sql, as symbols.

Generated from db/queries/privacy_records.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/privacy_records.sql:1
SEALED_NOTE_ADD = Query("sealed_note_add", lambda *, item_id, queue_scope, actor, actor_role, authentication_id: None)
"""A note on an item under a privacy policy, or on a QA copy of one (the copy carries no
policy of its own: the item whose decision it checks does): item_events gets the `noted`
row WITHOUT its body, and sealed_note_insert stores the body sealed under the subject's
data key, in the same transaction (the event's id is part of the sealed body's associated
data, so the row comes first). Fence as item_note_add's: a review item in a queue the
caller's token covers (:queue_scope NULL: every queue). Hints `noted` as it does; a hint
never carries a body.
"""

# db/queries/privacy_records.sql:31
SEALED_NOTE_INSERT = Query("sealed_note_insert", lambda *, event_id, item_id, subject_ref, key_version, nonce, ciphertext: None)
"""The sealed body of the note sealed_note_add recorded."""

# db/queries/privacy_records.sql:36
SEALED_NOTES_GET = Query("sealed_notes_get", lambda *, event_ids: None)
"""The sealed notes of these timeline events, with what decides who may open them: the
policy the item (or, for a QA copy, the item it checks) was enqueued under, and whether
its subject's processing is restricted.
"""

# db/queries/privacy_records.sql:54
AUDIT_FIELDS_GET = Query("audit_fields_get", lambda *, item_ids: None)
"""The current fields of items, as their audit packs carry them (a QA copy's are those of
the item whose decision it checks, under the same evidence hash): path, class, digest,
the salt while the field is not erased, the policy version that split the item, and
whether its subject's processing is restricted. Never a ciphertext or a nonce.
"""

# db/queries/privacy_records.sql:71
DECISION_NOTE_SUBJECT = Query("decision_note_subject", lambda *, item_id, queue_scope: None)
"""The subject a decision's note on this item is sealed for, when the item was enqueued
under a privacy policy (no row: the note is stored as it is written). One read by
primary key, made only for a decision that carries a note; a token's queues fence it
(:queue_scope NULL: every queue).
"""

# db/queries/privacy_records.sql:83
DECISION_NOTES_GET = Query("decision_notes_get", lambda *, item_ids: None)
"""What decides who may open the sealed decision notes of these policy items: the policy the
item was enqueued under, whether its subject's processing is restricted, whether its
personal fields were erased, and which of its subject's key versions are shredded (a
note sealed under one of those reads as erased, whatever a process still has cached).
"""
