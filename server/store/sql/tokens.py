"""The statements of db/queries/tokens.sql, as symbols.

Generated from db/queries/tokens.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/tokens.sql:1
TOKEN_INSERT = Query("token_insert", lambda *, token_hash, user_name, role, queues, expires_at, demo: None)

# db/queries/tokens.sql:6
TOKEN_GET_ACTIVE = Query("token_get_active", lambda *, token_hash, used_resolution_seconds: None)
"""The lookup also notes that the token was used, writing only when the note is older than
:used_resolution_seconds, so almost every lookup writes nothing. The condition is on the
table's row (not the snapshot's), so processes looking up one token at once write once.
"""

# db/queries/tokens.sql:28
TOKENS_REVOKE_FOR_USER = Query("tokens_revoke_for_user", lambda *, user_name: None)

# db/queries/tokens.sql:34
TOKEN_REVOKE = Query("token_revoke", lambda *, token_id: None)
"""The token's row whether or not this call revoked it: `revoked` tells which."""

# db/queries/tokens.sql:46
TOKENS_REVOKE_DEMO = Query("tokens_revoke_demo", lambda: None)

# db/queries/tokens.sql:52
TOKENS_LIST = Query("tokens_list", lambda *, include_inactive: None)
"""Never the hash: what an operator needs to decide what to revoke."""
