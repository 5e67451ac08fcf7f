"""Console sessions after an OpenID Connect login: the browser holds a random id, the
database its SHA-256 and everything else (grants, the provider's sid, the ID token)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from server.config import AuthSettings
from server.domain.identity.people import Person
from server.domain.identity.tokens import LAST_USED_RESOLUTION_SECONDS, hash_token
from server.domain.model import Grant, Role
from server.domain.rows import from_row
from server.store import sql
from server.store.database import Database, Row

# Session ids carry 256 random bits, like CLI tokens; a different prefix tells them apart in
# a log line or a support ticket (the value itself is never logged).
SESSION_PREFIX = "cws_"


class SessionEnd(Enum):
    """Why a session ended, as `casework session list --all` shows it."""

    LOGOUT = "logout"
    REVOKED = "revoked by an operator"
    USER_REVOKED = "the person's access was revoked"
    PROVIDER_LOGOUT = "logged out at the identity provider"


@dataclass(frozen=True)
class LoginFacts:
    """What the provider said at login that the session keeps."""

    provider_sid: str | None
    id_token: str | None
    refresh_token: str | None
    auth_time: datetime | None
    acr: str | None


@dataclass(frozen=True)
class StartedSession:
    id: int
    secret: str
    expires_at: datetime


@dataclass(frozen=True)
class LiveSession:
    """A session as the resolver reads it on every cache miss."""

    id: int
    principal_id: int
    issuer: str
    subject: str
    user_name: str
    display_name: str | None
    grants: tuple[Grant, ...]
    auth_time: datetime | None
    acr: str | None
    expires_at: datetime


def grants_value(grants: tuple[Grant, ...]) -> list[dict[str, Any]]:
    """The grants as the jsonb column takes them (the pool's codec encodes the value: a
    string given here would be stored as one JSON string, which the column refuses)."""
    return [
        {"role": grant.role.value, "queues": list(grant.queues), "rules": list(grant.rules)}
        for grant in grants
    ]


def grants_json(grants: tuple[Grant, ...]) -> str:
    return json.dumps(grants_value(grants))


def grants_from_json(raw: str | list[dict[str, Any]]) -> tuple[Grant, ...]:
    entries: list[dict[str, Any]] = json.loads(raw) if isinstance(raw, str) else raw
    return tuple(
        Grant(
            role=Role(str(entry["role"])),
            queues=tuple(str(queue) for queue in entry.get("queues") or ()),
            rules=tuple(str(rule) for rule in entry.get("rules") or ()),
        )
        for entry in entries
    )


async def start_session(
    db: Database,
    person: Person,
    grants: tuple[Grant, ...],
    facts: LoginFacts,
    settings: AuthSettings,
) -> StartedSession:
    secret = SESSION_PREFIX + secrets.token_urlsafe(32)
    row = await db.fetchrow(
        sql.identity.SESSION_INSERT,
        token_hash=hash_token(secret),
        principal_id=person.id,
        grants=grants_value(grants),
        provider_sid=facts.provider_sid,
        id_token=facts.id_token,
        refresh_token=facts.refresh_token,
        auth_time=facts.auth_time,
        acr=facts.acr,
        idle_seconds=settings.session_idle_seconds,
        max_seconds=settings.session_max_seconds,
    )
    assert row is not None
    return StartedSession(id=row["id"], secret=secret, expires_at=row["expires_at"])


def looks_like_session(secret: str) -> bool:
    return secret.startswith(SESSION_PREFIX) and len(secret) <= 200


async def live_session(db: Database, secret: str) -> LiveSession | None:
    if not looks_like_session(secret):
        return None
    row = await db.fetchrow(
        sql.identity.SESSION_GET_LIVE,
        token_hash=hash_token(secret),
        used_resolution_seconds=LAST_USED_RESOLUTION_SECONDS,
    )
    if row is None:
        return None
    return from_row(LiveSession, row, grants=grants_from_json(row["grants"]))


@dataclass(frozen=True)
class EndedSession:
    id: int
    id_token: str | None
    provider_sid: str | None


async def end_session(db: Database, secret: str, reason: SessionEnd) -> EndedSession | None:
    """Logout: ends the browser's own session; what RP-initiated logout needs of it."""
    if not looks_like_session(secret):
        return None
    row = await db.fetchrow(
        sql.identity.SESSION_END, token_hash=hash_token(secret), reason=reason.value
    )
    return None if row is None else from_row(EndedSession, row)


class SessionRevocation(Enum):
    ENDED = "ended"
    ALREADY_ENDED = "already ended"
    NO_SUCH_SESSION = "no such session"


async def end_session_by_id(db: Database, session_id: int) -> tuple[SessionRevocation, str | None]:
    """`casework session revoke ID`: the outcome, and whose session it was."""
    row = await db.fetchrow(
        sql.identity.SESSION_END_BY_ID, session_id=session_id, reason=SessionEnd.REVOKED.value
    )
    if row is None:
        return SessionRevocation.NO_SUCH_SESSION, None
    outcome = SessionRevocation.ENDED if row["ended"] else SessionRevocation.ALREADY_ENDED
    return outcome, row["user_name"]


@dataclass(frozen=True)
class SessionRecord:
    """What an operator sees of a session: never its id's secret, nor the provider's tokens."""

    id: int
    user_name: str
    display_name: str | None
    issuer: str
    subject: str
    grants: tuple[Grant, ...]
    auth_time: datetime | None
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    ends_at: datetime
    ended_at: datetime | None
    end_reason: str | None


def _session_record(row: Row) -> SessionRecord:
    return from_row(SessionRecord, row, grants=grants_from_json(row["grants"]))


async def list_sessions(db: Database, *, include_ended: bool = False) -> list[SessionRecord]:
    rows = await db.fetch(sql.identity.SESSIONS_LIST, include_ended=include_ended)
    return [_session_record(row) for row in rows]
