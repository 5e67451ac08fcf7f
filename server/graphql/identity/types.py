"""How an actor authenticated, as decisions and timeline entries show it."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.types import Info

from server.domain import model
from server.graphql.context import Context

strawberry.enum(
    model.CredentialKind,
    name="CredentialKind",
    description="How a caller proved who it is: SESSION (the console's sign-in with the "
    "identity provider), JWT (an access token of the provider), CLI_TOKEN (a token minted "
    "by `casework token create`).",
)
CredentialKind = model.CredentialKind


@strawberry.type(
    description="How the actor authenticated when the record was made (append-only: what "
    "was true then)."
)
class Authentication:
    kind: CredentialKind
    issuer: str | None = strawberry.field(
        description="The identity provider that vouched for the actor; null for a CLI token."
    )
    subject: str | None = strawberry.field(
        description="The actor's subject at that provider (never the e-mail address)."
    )
    session_id: strawberry.ID | None = strawberry.field(
        description="The console session it was made in (SESSION only)."
    )
    client_id: str | None = strawberry.field(
        description="The OAuth client an access token was issued to, where it says."
    )
    auth_time: datetime | None = strawberry.field(
        description="When the actor last signed in at the provider, where it says."
    )
    acr: str | None = strawberry.field(
        description="The authentication context class of that sign-in, where it says."
    )
    rules: list[str] = strawberry.field(
        description="The claim-mapping rules that granted the role the actor acted under."
    )

    @classmethod
    def from_domain(cls, authentication: model.Authentication) -> Authentication:
        return cls(
            kind=authentication.kind,
            issuer=authentication.issuer,
            subject=authentication.subject,
            session_id=None
            if authentication.session_id is None
            else strawberry.ID(str(authentication.session_id)),
            client_id=authentication.client_id,
            auth_time=authentication.auth_time,
            acr=authentication.acr,
            rules=list(authentication.rules),
        )


async def authentication_of(
    info: Info[Context, None], authentication_id: int | None
) -> Authentication | None:
    """Through the request's loader: one statement for every record of a response."""
    if authentication_id is None:
        return None
    found = await info.context.loaders.authentication.load(authentication_id)
    return None if found is None else Authentication.from_domain(found)
