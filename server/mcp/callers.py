"""Who calls a tool: the API's credentials, resolved by the API's one resolver.

Over streamable HTTP every request carries `Authorization: Bearer <token>` (and, for a
principal with several grants, `X-Casework-Role`), checked before the MCP layer reads the
body: no token or a revoked one is 401, a role not held 403, as /graphql answers. Over stdio
the process was started with one token (CASEWORK_MCP_TOKEN), resolved again on every call,
so a revocation takes effect within the resolver's cache time there too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from server.domain.failures import NotPermitted
from server.domain.identity.access_tokens import ProviderUnavailable
from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.model import Principal
from server.store.errors import is_unavailable

log = logging.getLogger("casework.mcp")

# Where the HTTP gate leaves the resolved principal in the request's ASGI scope.
PRINCIPAL_SCOPE_KEY = "casework.principal"
ROLE_HEADER = "x-casework-role"
RETRY_AFTER_SECONDS = 5


class Callers(Protocol):
    async def principal(self, request: Any) -> Principal | NotPermitted:
        """The caller of the message `request` (the transport's request object, or None)."""
        ...


class TokenCaller:
    """stdio: the one token the process was started with, resolved on every call."""

    def __init__(self, resolver: Callable[[], CredentialResolver], token: str) -> None:
        self._resolver = resolver
        self._credentials = self.credentials_of(token)

    @staticmethod
    def credentials_of(token: str) -> Credentials:
        return Credentials.of(f"Bearer {token}")

    async def principal(self, request: Any) -> Principal | NotPermitted:
        try:
            found = await self._resolver().resolve(self._credentials)
        except (RoleNotHeld, NoAccess) as refusal:
            return NotPermitted(str(refusal))
        if found is None:
            return NotPermitted("CASEWORK_MCP_TOKEN is not (or no longer) a valid token")
        return found


class GatedCaller:
    """HTTP: what the gate resolved for this very request."""

    async def principal(self, request: Any) -> Principal | NotPermitted:
        scope = getattr(request, "scope", None)
        found = scope.get(PRINCIPAL_SCOPE_KEY) if isinstance(scope, dict) else None
        if not isinstance(found, Principal):
            # The gate stands before every route: a message without it never came by HTTP.
            return NotPermitted("no credentials came with this message")
        return found


class BearerGate:
    """ASGI middleware: refuses an HTTP request without valid API credentials."""

    def __init__(self, app: ASGIApp, resolver: Callable[[], CredentialResolver]) -> None:
        self._app = app
        self._resolver = resolver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        credentials = Credentials.of(headers.get("authorization"), role=headers.get(ROLE_HEADER))
        try:
            principal = await self._resolver().resolve(credentials)
        except (RoleNotHeld, NoAccess) as refusal:
            await _refuse(send, 403, "FORBIDDEN", str(refusal))
            return
        except ProviderUnavailable as error:
            log.warning("access token: the identity provider is unreachable: %r", error)
            await _refuse(send, 503, "UNAVAILABLE", "the identity provider cannot be reached")
            return
        except Exception as error:
            if not is_unavailable(error):
                raise
            log.warning("token lookup: database unavailable: %r", error)
            await _refuse(send, 503, "UNAVAILABLE", "the database is unavailable")
            return
        if principal is None:
            await _refuse(
                send,
                401,
                "UNAUTHENTICATED",
                "a valid bearer token is required (Authorization: Bearer <token>)",
            )
            return
        await self._app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_SECONDS).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
