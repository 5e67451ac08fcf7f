"""The statements of db/queries/tokens.sql, as symbols.

Generated from db/queries/tokens.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _token_insert(
    *,
    token_hash: Any,
    user_name: Any,
    role: Any,
    queues: Any,
    expires_at: Any,
    demo: Any,
) -> None: ...


TOKEN_INSERT = Query("token_insert", _token_insert)
"""db/queries/tokens.sql:1"""


def _token_get_active(
    *,
    token_hash: Any,
    used_resolution_seconds: Any,
) -> None: ...


TOKEN_GET_ACTIVE = Query("token_get_active", _token_get_active)
"""db/queries/tokens.sql:6

The lookup also notes that the token was used, writing only when the note is older than
:used_resolution_seconds, so almost every lookup writes nothing. The condition is on the
table's row (not the snapshot's), so processes looking up one token at once write once.
"""


def _tokens_revoke_for_user(
    *,
    user_name: Any,
) -> None: ...


TOKENS_REVOKE_FOR_USER = Query("tokens_revoke_for_user", _tokens_revoke_for_user)
"""db/queries/tokens.sql:28"""


def _token_revoke(
    *,
    token_id: Any,
) -> None: ...


TOKEN_REVOKE = Query("token_revoke", _token_revoke)
"""db/queries/tokens.sql:34

The token's row whether or not this call revoked it: `revoked` tells which.
"""


def _tokens_revoke_demo() -> None: ...


TOKENS_REVOKE_DEMO = Query("tokens_revoke_demo", _tokens_revoke_demo)
"""db/queries/tokens.sql:46"""


def _tokens_list(
    *,
    include_inactive: Any,
) -> None: ...


TOKENS_LIST = Query("tokens_list", _tokens_list)
"""db/queries/tokens.sql:52

Never the hash: what an operator needs to decide what to revoke.
"""
