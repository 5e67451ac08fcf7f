"""revokeUser: the one revocation routine (server/domain/identity/revocation.py), for an
admin. Parse, call, map."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.identity import revocation
from server.graphql.context import Context
from server.graphql.errors import Error, InvalidInput, NotPermitted, from_failure
from server.graphql.observe import note_error_member


@strawberry.type(
    description="The person is revoked: their sessions ended, their CLI tokens revoked, "
    "their provider tokens issued before revokedAt refused, their leases released (each "
    "item's timeline says why). Their open sockets close within CASEWORK_TOKEN_CACHE_SECONDS. "
    "Revoking again ends nothing more."
)
class UserRevoked:
    user: str
    sessions_ended: int
    tokens_revoked: int
    leases_released: int
    released_item_ids: list[strawberry.ID]
    revoked_at: datetime | None = strawberry.field(
        description="Credentials issued before this are refused; null for a user known only "
        "by CLI tokens."
    )

    @classmethod
    def of(cls, revoked: revocation.UserRevoked) -> UserRevoked:
        return cls(
            user=revoked.user,
            sessions_ended=revoked.sessions_ended,
            tokens_revoked=revoked.tokens_revoked,
            leases_released=revoked.leases_released,
            released_item_ids=[strawberry.ID(str(item)) for item in revoked.released_items],
            revoked_at=revoked.revoked_at,
        )


@strawberry.type(description="No sign-in, CLI token or lease goes by this user name.")
class UserNotFound(Error):
    user: str


RevokeUserResult = Annotated[
    UserRevoked | UserNotFound | NotPermitted | InvalidInput, strawberry.union("RevokeUserResult")
]


@strawberry.input
class RevokeUserInput:
    user: str = strawberry.field(description="The user name decisions record the person by.")
    reason: str | None = strawberry.field(
        default=None, description="Why, for the record and each released lease's timeline."
    )


@strawberry.type
class IdentityMutation:
    @strawberry.mutation(
        description="Revokes a person everywhere at once: sessions, CLI tokens, provider "
        "tokens issued before now, live leases. Admins only."
    )
    async def revoke_user(
        self, info: Info[Context, None], input: RevokeUserInput
    ) -> RevokeUserResult:
        ctx = info.context
        result = await revocation.revoke_user_as(ctx.db, ctx.principal, input.user, input.reason)
        if isinstance(result, revocation.UserNotFound):
            note_error_member("UserNotFound")
            return UserNotFound(message=result.message, user=result.user)
        if is_failure(result):
            return from_failure(result)
        return UserRevoked.of(result)
