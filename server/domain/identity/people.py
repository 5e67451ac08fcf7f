"""The identities an OpenID provider vouches for: people and machines, by issuer + subject."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from server.store import sql
from server.store.database import Database
from server.store.errors import IntegrityViolation

HANDLE_CONSTRAINT = "principals_user_name_key"
# Handles are recorded as the actor on every row a person writes: kept short and plain.
HANDLE_LIMIT = 64
_NOT_IN_HANDLE = re.compile(r"[^A-Za-z0-9._@+-]+")


class PrincipalKind(Enum):
    PERSON = "person"
    MACHINE = "machine"  # client credentials: an integration, no person behind it


@dataclass(frozen=True)
class Person:
    """A principal as the database knows it. user_name is its handle, chosen at first sight
    and kept: history never changes when the provider renames someone."""

    id: int
    user_name: str
    display_name: str | None
    kind: PrincipalKind
    revoked_at: datetime | None

    def refuses(self, issued_at: datetime | None) -> bool:
        """Whether a credential issued then was revoked since (no issue time: refused)."""
        if self.revoked_at is None:
            return False
        return issued_at is None or issued_at <= self.revoked_at


def kind_of(claims: Mapping[str, Any]) -> PrincipalKind:
    """A client-credentials token names its own client as the subject."""
    client = claims.get("client_id") or claims.get("azp")
    return PrincipalKind.MACHINE if client and client == claims.get("sub") else PrincipalKind.PERSON


def display_name_of(claims: Mapping[str, Any]) -> str | None:
    for claim in ("name", "preferred_username", "nickname", "given_name"):
        value = claims.get(claim)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    return None


def handle_candidate(claims: Mapping[str, Any]) -> str:
    """The handle a new principal asks for: its username as the provider gives it, else its
    subject. Never the e-mail address: people are not identified by it."""
    for claim in ("preferred_username", "username", "client_id", "sub"):
        value = claims.get(claim)
        if isinstance(value, str):
            handle = _NOT_IN_HANDLE.sub("-", value.strip()).strip("-")[:HANDLE_LIMIT]
            if handle:
                return handle
    return "user"


def fallback_handle(candidate: str, issuer: str, subject: str) -> str:
    """For a candidate someone already goes by: unique to this issuer + subject."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:10]
    return f"{candidate[: HANDLE_LIMIT - 11]}-{digest}"


async def person_seen(db: Database, issuer: str, claims: Mapping[str, Any]) -> Person:
    """Records (or refreshes) the principal these verified claims describe."""
    subject = str(claims["sub"])
    candidate = handle_candidate(claims)
    fallback = fallback_handle(candidate, issuer, subject)
    arguments = {
        "issuer": issuer,
        "subject": subject,
        "fallback_user_name": fallback,
        "display_name": display_name_of(claims),
        "kind": kind_of(claims).value,
    }
    try:
        row = await db.fetchrow(sql.identity.PRINCIPAL_UPSERT, user_name=candidate, **arguments)
    except IntegrityViolation as violation:
        # Two new identities asking for one free handle at once: the second takes its own.
        if violation.constraint != HANDLE_CONSTRAINT:
            raise
        row = await db.fetchrow(sql.identity.PRINCIPAL_UPSERT, user_name=fallback, **arguments)
    if row is None:
        row = await db.fetchrow(sql.identity.PRINCIPAL_GET, issuer=issuer, subject=subject)
    if row is None:  # pragma: no cover - the upsert above wrote it or found it
        raise LookupError(f"principal {issuer} {subject} vanished")
    return Person(
        id=row["id"],
        user_name=row["user_name"],
        display_name=row["display_name"],
        kind=PrincipalKind(row["kind"]),
        revoked_at=row["revoked_at"],
    )
