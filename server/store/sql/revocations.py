"""The statements of db/queries/revocations.sql, as symbols.

Generated from db/queries/revocations.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/revocations.sql:1
REVOCATION_SUBJECT_GET = Query("revocation_subject_get", lambda *, user_name: None)
"""Whom a revocation names: a principal the provider vouched for, someone holding CLI
tokens (live or not), or a lease holder by that name. Nothing here: no such user.
"""

# db/queries/revocations.sql:10
REVOCATION_USER_GET_BY_SUBJECT = Query("revocation_user_get_by_subject", lambda *, issuer, subject: None)
"""Back-channel logout naming a subject: the principal with that issuer + subject."""
