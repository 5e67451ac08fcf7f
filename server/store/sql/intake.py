"""The statements of db/queries/intake.sql, as symbols.

Generated from db/queries/intake.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/intake.sql:7
INTAKE_MESSAGE_GET = Query("intake_message_get", lambda *, source, message_id: None)
"""The record of one dead letter, if it was taken already."""

# db/queries/intake.sql:13
INTAKE_MESSAGE_INSERT = Query("intake_message_insert", lambda *, source, message_id, broker, exception_id, item_id, origin, body, headers, failure: None)
"""Records a dead letter with what it became (an exception or an item). No row back: another
intake took the same message in a transaction that committed first (it waited for that
one here), so this transaction must be rolled back and the message acknowledged as a
repeat.
"""
