"""OpenID Connect Back-Channel Logout 1.0: the provider POSTs a `logout_token` when a person
signs out there, or is removed. Casework verifies it (a `logout+jwt` for its client, with
the back-channel event, no nonce, recent), refuses a replay (`logout_tokens`), and revokes
the people it names through the one revocation routine: their sessions end, their tokens
issued before now are refused, their sockets close within the credential cache's window,
their leases are released with a timeline row saying why.

Mounted by `create_app`:

    routes += backchannel_routes(BackchannelLogout(database, verifier, client_id))

where `database` and `verifier` are callables giving the app's Database and its
AccessTokenVerifier for the configured issuer (both made in the lifespan).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server.domain.identity.access_tokens import (
    AccessTokenVerifier,
    LogoutTokenRefused,
    ProviderUnavailable,
)
from server.domain.identity.revocation import RevocationSource, UserRevoked, revoke_user
from server.store import sql
from server.store.database import Database

log = logging.getLogger("casework.identity")

PATH = "/auth/backchannel-logout"
# A logout token is a few hundred bytes; the form around it is no bigger.
MAX_BODY_BYTES = 16_384
NO_STORE = {"Cache-Control": "no-store"}
SESSION_END_REASON = "backchannel logout"


@dataclass(frozen=True)
class BackchannelLogout:
    database: Callable[[], Database]
    verifier: Callable[[], AccessTokenVerifier]
    # The console's OAuth client: the logout token's audience.
    client_id: str

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _refused("invalid_request", "the request is too large")
        tokens = parse_qs(body.decode("utf-8", "replace")).get("logout_token", [])
        if len(tokens) != 1:
            return _refused("invalid_request", "the form has no single logout_token field")
        verifier = self.verifier()
        try:
            logout = await verifier.verify_logout_token(tokens[0], client_id=self.client_id)
        except LogoutTokenRefused as refused:
            return _refused("invalid_request", f"logout token refused: {refused}")
        except ProviderUnavailable:
            log.warning("back-channel logout: the provider's keys cannot be fetched")
            return JSONResponse(
                {"error": "temporarily_unavailable"}, status_code=503, headers=NO_STORE
            )
        db = self.database()
        if (
            await db.fetchrow(
                sql.identity.LOGOUT_TOKEN_INSERT, issuer=logout.issuer, jti=logout.jti
            )
            is None
        ):
            return _refused("invalid_request", "this logout token was used already")
        users: set[str] = set()
        if logout.sid is not None:
            ended = await db.fetch(
                sql.identity.SESSIONS_END_FOR_PROVIDER_SID,
                issuer=logout.issuer,
                provider_sid=logout.sid,
                reason=SESSION_END_REASON,
            )
            users.update(row["user_name"] for row in ended)
        if logout.subject is not None:
            found = await db.fetchrow(
                sql.revocations.REVOCATION_USER_GET_BY_SUBJECT,
                issuer=logout.issuer,
                subject=logout.subject,
            )
            if found is not None:
                users.add(found["user_name"])
        revoked = [
            result
            for user in sorted(users)
            if isinstance(
                result := await revoke_user(
                    db,
                    user,
                    source=RevocationSource.BACKCHANNEL,
                    revoked_by=logout.issuer[:200],
                    reason=None if logout.sid is None else f"provider session {logout.sid[:100]}",
                ),
                UserRevoked,
            )
        ]
        log.info(
            "back-channel logout from %s: revoked %s",
            logout.issuer,
            ", ".join(r.user for r in revoked) or "nobody known",
        )
        return JSONResponse(
            {
                "revoked": [
                    {
                        "user": r.user,
                        "sessionsEnded": r.sessions_ended,
                        "tokensRevoked": r.tokens_revoked,
                        "leasesReleased": r.leases_released,
                    }
                    for r in revoked
                ]
            },
            headers=NO_STORE,
        )


def _refused(error: str, description: str) -> JSONResponse:
    # A client's (or an attacker's) mistake: one line, no traceback.
    log.warning("back-channel logout refused: %s", description)
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=400, headers=NO_STORE
    )


def backchannel_routes(handler: BackchannelLogout) -> list[Route]:
    """`POST /auth/backchannel-logout`, for create_app's routes."""
    return [Route(PATH, handler.handle, methods=["POST"])]
