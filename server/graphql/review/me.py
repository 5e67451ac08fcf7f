"""`me`: who the caller is, under which role, by which grants, and how they signed in."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from server.domain import model
from server.domain.review import leases
from server.graphql.context import Context
from server.graphql.identity.types import Authentication
from server.graphql.review.types import HeldLease


@strawberry.type(description="A role and where it applies, as the sign-in rules gave it.")
class Grant:
    role: str
    queues: list[str] = strawberry.field(
        description="Queue names or patterns (`kyc*`) as granted; for a role other than "
        "reviewer, none means every queue."
    )
    rules: list[str] = strawberry.field(description="The rules that gave this grant.")

    @classmethod
    def from_domain(cls, grant: model.Grant) -> Grant:
        return cls(role=grant.role.value, queues=list(grant.queues), rules=list(grant.rules))


@strawberry.type
class Me:
    user: str
    role: str
    queues: list[str]
    active_role: str = strawberry.field(
        description="The role this request acts under: X-Casework-Role's, else the first grant's."
    )
    display_name: str | None
    grants: list[Grant] = strawberry.field(
        description="Every grant the caller holds; a CLI token holds the one it was made with."
    )
    authentication: Authentication | None

    @classmethod
    def of(cls, principal: model.Principal) -> Me:
        grants = principal.grants or (
            model.Grant(principal.role, tuple(sorted(principal.queues)), ()),
        )
        authentication = principal.authentication
        return cls(
            user=principal.user,
            role=principal.role.value,
            queues=principal.named_queues(),
            active_role=principal.role.value,
            display_name=principal.display_name,
            grants=[Grant.from_domain(grant) for grant in grants],
            authentication=None
            if authentication is None
            else Authentication.from_domain(authentication),
        )

    @strawberry.field(
        description="Your live leases, soonest to run out first, with their tokens: a "
        "reloaded console takes its work up again from here."
    )
    async def leases(self, info: Info[Context, None]) -> list[HeldLease]:
        found = await leases.held_leases(info.context.db, info.context.principal)
        return [HeldLease.from_domain(claim) for claim in found]
