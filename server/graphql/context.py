"""What every resolver sees: the database, the caller, per-request loaders, live updates."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketState

from server.domain.identity.grants import NoAccess, RoleNotHeld
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.model import Principal, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.events.live import LiveUpdates
from server.events.subscriber import Inbox, LatestValue, Message
from server.graphql.loaders import Loaders
from server.store.database import Database
from server.store.errors import is_unavailable
from server.store.routing import ReadKind, Reads

# A socket's caller until connection_init names a token: a reviewer of no queue, who may
# do nothing. Strawberry refuses subscriptions before the init is acknowledged anyway.
NOBODY = Principal("", Role.REVIEWER, frozenset())

# A socket's credentials until connection_init presents some.
NO_CREDENTIALS = Credentials()

# Close codes a console can act on (4400-4499 are the protocol's application range).
CLOSE_TOKEN_REVOKED = 4403
CLOSE_TOKEN_REVOKED_REASON = "token revoked or expired"


# Slots: a socket keeps its context as long as it is open, thousands of them per process.
@dataclass(slots=True)
class Context:
    db: Database
    principal: Principal
    loaders: Loaders
    live: LiveUpdates
    tokens: CredentialResolver
    # The credentials as presented, to re-check them on every event of a subscription.
    credentials: Credentials = NO_CREDENTIALS
    socket: WebSocket | None = None
    # An HTTP request's sub-response: where an UNAVAILABLE error sets 503 and Retry-After.
    response: Response | None = None
    connection_params: dict[str, Any] = field(default_factory=dict)
    # One clock per request, so every item in a response is judged against the same instant.
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Hosts webhook targets may name (CASEWORK_EFFECT_ALLOWED_HOSTS); empty: any host.
    effect_allowed_hosts: frozenset[str] = frozenset()
    # Personal data's keys (server/domain/privacy/keys.py); None where nothing may need one.
    keyring: Keyring | None = None
    # Where every erasure is appended before it commits (CASEWORK_ERASURE_LEDGER).
    erasure_ledger: ErasureLedger | None = None
    # With a read replica (CASEWORK_READ_DATABASE_URL): where each kind of read goes, and
    # how old the replica's answers were (server/store/routing.py). None: all on `db`.
    reads: Reads | None = None

    def database(self, kind: ReadKind) -> Database:
        """The database a resolver's own read of this kind goes to (loaders choose theirs)."""
        return self.db if self.reads is None else self.reads.database(kind)

    @property
    def expires_at(self) -> datetime | None:
        """When the caller's token stops working, if it names a moment."""
        return self.principal.expires_at

    def forget_reads(self) -> None:
        """A socket's context lives as long as the socket: each event reads afresh."""
        self.loaders = Loaders(self.db)
        self.now = datetime.now(UTC)

    def joined(self, channel: Inbox | LatestValue[Any]) -> None:
        """A subscription resolver says where it listens. Only a shared execution's context
        keeps it (server/graphql/multiplex.py)."""

    def delivering(self, message: Message) -> None:
        """A subscription resolver says which message its next result answers; as joined."""

    async def token_valid(self) -> bool | None:
        """Re-resolves the token (cached briefly): False once it is revoked or expired, None
        while the database cannot say. An outage is not a revocation: callers keep trusting
        the token until it can be checked again."""
        if self.expires_at is not None and self.expires_at <= datetime.now(UTC):
            return False
        try:
            principal = await self.tokens.resolve(self.credentials)
        except (RoleNotHeld, NoAccess):
            # The grants changed under the socket (a new login recomputed them).
            return False
        except Exception as error:
            if is_unavailable(error):
                return None
            raise
        return principal == self.principal

    async def still_authorized(self) -> bool:
        """As token_valid; closes the socket if the token is no longer valid."""
        if await self.token_valid() is not False:
            return True
        await self.close_socket_unauthorized()
        return False

    async def close_socket_unauthorized(self) -> None:
        # Several operations, and the socket's token watch, may find out at once.
        socket = self.socket
        if socket is not None and socket.application_state is WebSocketState.CONNECTED:
            await socket.close(CLOSE_TOKEN_REVOKED, CLOSE_TOKEN_REVOKED_REASON)
