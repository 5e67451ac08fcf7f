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
READING_FIELD_GET = Query("reading_field_get", lambda *, item_id, path: None)
"""One field of an item, sealed value included, for a reveal (after it is logged)."""

# db/queries/privacy_reading.sql:41
READING_POLICIES_GET = Query("reading_policies_get", lambda *, queues, versions: None)
"""Policy versions by (queue, version), for every item of a page at once."""
