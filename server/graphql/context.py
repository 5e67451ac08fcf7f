"""What every resolver sees: the database, the caller, per-request loaders, live updates."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.websockets import WebSocket

from server.domain.model import Principal, Role
from server.events.live import LiveUpdates
from server.graphql.loaders import Loaders
from server.identity import TokenResolver
from server.store.database import Database

# A socket's caller until connection_init names a token: a reviewer of no queue, who may
# do nothing. Strawberry refuses subscriptions before the init is acknowledged anyway.
NOBODY = Principal("", Role.REVIEWER, frozenset())

# Close codes a console can act on (4400-4499 are the protocol's application range).
CLOSE_TOKEN_REVOKED = 4403


@dataclass
class Context:
    db: Database
    principal: Principal
    loaders: Loaders
    live: LiveUpdates
    tokens: TokenResolver
    # The bearer token as sent, to re-check it on every event of a subscription.
    authorization: str | None = None
    socket: WebSocket | None = None
    connection_params: dict[str, Any] = field(default_factory=dict)
    # One clock per request, so every item in a response is judged against the same instant.
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def forget_reads(self) -> None:
        """A socket's context lives as long as the socket: each event reads afresh."""
        self.loaders = Loaders(self.db)
        self.now = datetime.now(UTC)

    async def still_authorized(self) -> bool:
        """Re-resolves the token (cached briefly); closes the socket if it is no longer valid."""
        principal = await self.tokens.resolve(self.authorization)
        if principal == self.principal:
            return True
        if self.socket is not None:
            await self.socket.close(CLOSE_TOKEN_REVOKED, "token revoked or expired")
        return False
