"""The one routine that revokes a person: `casework user revoke`, the revokeUser mutation
and the provider's back-channel logout all call `revoke_user`.

In one transaction it refuses every credential of theirs issued before now (the principal's
`revoked_at`: sessions begun and access tokens issued before it), ends their live sessions,
revokes their CLI tokens, ends every live lease they hold (each item's timeline says why)
and records who revoked whom (`principal_revocations`). Open websockets of theirs close
within the credential cache's window, on every process, as for a revoked CLI token: each
socket re-resolves its credentials on a timer and finds nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Role
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database

# Why a lease ended, in the timeline of each item it was held on.
LEASE_REASON_PREFIX = "access revoked"
# How a session ended (sessions.end_reason).
SESSION_END_REASON = "revoked"
MAX_USER_NAME = 200
# principal_revocations.reason holds this much.
MAX_REASON = 1000


class RevocationSource(enum.Enum):
    CLI = "cli"  # casework user revoke
    ADMIN = "admin"  # the revokeUser mutation
    BACKCHANNEL = "backchannel"  # the provider's back-channel logout


@dataclass(frozen=True)
class UserRevoked:
    """What one revocation ended. Revoking again ends nothing more (all counts 0) and moves
    the refusal's moment on: it is idempotent."""

    user: str
    source: RevocationSource
    revoked_by: str
    reason: str | None
    # None when the user is known only by CLI tokens (nothing to refuse by issue time).
    revoked_at: datetime | None
    sessions_ended: int
    tokens_revoked: int
    leases_released: int
    # The item ids whose leases ended, in id order.
    released_items: tuple[int, ...]
    revocation_id: int
    at: datetime


@dataclass(frozen=True)
class UserNotFound:
    """No principal, CLI token or lease holder goes by this name. Nothing was written."""

    user: str

    @property
    def message(self) -> str:
        return f"no user {self.user[:200]!r}: no sign-in, token or lease goes by that name"


def lease_reason(source: RevocationSource, reason: str | None) -> str:
    """What each released lease's timeline row says."""
    said = f"{LEASE_REASON_PREFIX}: {source.value}"
    return f"{said}: {reason}" if reason else said


async def revoke_user(
    db: Database,
    user_name: str,
    *,
    source: RevocationSource,
    revoked_by: str,
    reason: str | None,
    authentication_id: int | None = None,
) -> UserRevoked | UserNotFound:
    """Revokes a person everywhere, in one transaction (see the module's docstring).

    revoked_by is recorded as the actor of each lease's timeline row and of the revocation;
    authentication_id, when the revoker is a principal, says how they authenticated."""
    async with db.transaction() as tx:
        known = await tx.fetchrow(sql.revocations.REVOCATION_SUBJECT_GET, user_name=user_name)
        assert known is not None, "the existence checks always answer"
        if not (known["principal"] or known["tokens"] or known["leases"]):
            return UserNotFound(user_name)
        principal = await tx.fetchrow(sql.identity.PRINCIPAL_REVOKE, user_name=user_name)
        sessions = await tx.fetch(
            sql.identity.SESSIONS_END_FOR_USER, user_name=user_name, reason=SESSION_END_REASON
        )
        tokens = await tx.fetch(sql.tokens.TOKENS_REVOKE_FOR_USER, user_name=user_name)
        leases = await tx.fetch(
            sql.leases.LEASES_REVOKE_FOR_USER,
            user_name=user_name,
            actor=revoked_by,
            actor_role=Role.ADMIN.value,
            reason=lease_reason(source, reason),
            authentication_id=authentication_id,
        )
        recorded = await tx.fetchrow(
            sql.identity.PRINCIPAL_REVOCATION_INSERT,
            user_name=user_name,
            source=source.value,
            revoked_by=revoked_by,
            reason=reason,
            sessions_ended=len(sessions),
            tokens_revoked=len(tokens),
            leases_released=len(leases),
        )
        assert recorded is not None, "an insert returns its row"
    return UserRevoked(
        user=user_name,
        source=source,
        revoked_by=revoked_by,
        reason=reason,
        revoked_at=None if principal is None else principal["revoked_at"],
        sessions_ended=len(sessions),
        tokens_revoked=len(tokens),
        leases_released=len(leases),
        released_items=tuple(sorted(row["id"] for row in leases)),
        revocation_id=recorded["id"],
        at=recorded["at"],
    )


async def revoke_user_as(
    db: Database, principal: Principal, user_name: str, reason: str | None
) -> UserRevoked | UserNotFound | NotPermitted | InvalidInput:
    """The revokeUser mutation: an admin, for any user (a revocation is not scoped by
    queue: it takes the person's access everywhere)."""
    if principal.role is not Role.ADMIN:
        return NotPermitted("only an admin may revoke a user")
    user_name = user_name.strip()
    if not 1 <= len(user_name) <= MAX_USER_NAME:
        return InvalidInput(f"user is a user name, 1 to {MAX_USER_NAME} characters", "user")
    if problem := check_text(reason, "reason", required=False, limit=MAX_REASON):
        return problem
    return await revoke_user(
        db,
        user_name,
        source=RevocationSource.ADMIN,
        revoked_by=principal.user,
        reason=reason,
        authentication_id=principal.authentication_id,
    )
