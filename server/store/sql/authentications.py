"""The statements of db/queries/authentications.sql, as symbols.

Generated from db/queries/authentications.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/authentications.sql:1
AUTHENTICATIONS_GET_BY_IDS = Query("authentications_get_by_ids", lambda *, ids: None)
"""How the actors of the rows asked about authenticated (their `authentication_id`), for
Decision.authentication, ItemEvent.authentication and the audit pack. By primary key.
"""
