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
) -> None: ...


TOKEN_INSERT = Query("token_insert", _token_insert)
"""db/queries/tokens.sql:1"""


def _token_get_active(
    *,
    token_hash: Any,
) -> None: ...


TOKEN_GET_ACTIVE = Query("token_get_active", _token_get_active)
"""db/queries/tokens.sql:6"""


def _tokens_revoke_for_user(
    *,
    user_name: Any,
) -> None: ...


TOKENS_REVOKE_FOR_USER = Query("tokens_revoke_for_user", _tokens_revoke_for_user)
"""db/queries/tokens.sql:13"""
