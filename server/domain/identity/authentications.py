"""How a principal authenticated, recorded once per distinct way (append-only), so the
records of what people decide can point at it."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from server.domain.model import Principal
from server.store import sql
from server.store.database import Database


def fingerprint(principal: Principal) -> str:
    """SHA-256 over every recorded field: equal fingerprints, one row."""
    auth = principal.authentication
    assert auth is not None
    fields = [
        auth.kind.value,
        principal.user,
        principal.role.value,
        auth.issuer,
        auth.subject,
        auth.session_id,
        auth.token_id,
        auth.client_id,
        None if auth.auth_time is None else auth.auth_time.isoformat(),
        auth.acr,
        list(auth.rules),
    ]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


async def recorded(db: Database, principal: Principal) -> Principal:
    """The principal with `authentication.id` set to its row (written if new)."""
    auth = principal.authentication
    if auth is None or auth.id is not None:
        return principal
    arguments = {
        "fingerprint": fingerprint(principal),
        "kind": auth.kind.value,
        "user_name": principal.user,
        "role": principal.role.value,
        "issuer": auth.issuer,
        "subject": auth.subject,
        "session_id": auth.session_id,
        "token_id": auth.token_id,
        "client_id": auth.client_id,
        "auth_time": auth.auth_time,
        "acr": auth.acr,
        "rules": list(auth.rules),
    }
    row = await db.fetchrow(sql.identity.AUTHENTICATION_RECORD, **arguments)
    if row is None:
        # Another process inserted the same row after this statement's snapshot was taken:
        # it has committed by now (the insert waited for it), so a second look finds it.
        row = await db.fetchrow(sql.identity.AUTHENTICATION_RECORD, **arguments)
    assert row is not None
    return dataclasses.replace(principal, authentication=dataclasses.replace(auth, id=row["id"]))
