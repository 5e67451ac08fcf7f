"""People, sessions and recorded authentications made through the domain, for the
revocation, provenance and step-up tests (not a test module)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from server.config import AuthSettings
from server.domain.identity.authentications import recorded
from server.domain.identity.people import Person, person_seen
from server.domain.identity.sessions import LoginFacts, StartedSession, start_session
from server.domain.model import Authentication, CredentialKind, Grant, Principal, Role
from server.store.database import Database

ISSUER = "https://idp.example.test/realms/bank"
RULE = "kyc reviewers"


async def signed_in(
    db: Database,
    subject: str,
    *,
    role: Role = Role.REVIEWER,
    queues: tuple[str, ...] = ("kyc",),
    signed_in_ago: timedelta = timedelta(seconds=5),
    acr: str | None = None,
    provider_sid: str | None = None,
    issuer: str = ISSUER,
) -> tuple[Principal, Person, StartedSession]:
    """A person the provider vouched for, with a live session and its recorded
    authentication: the principal the resolver would build for the session's cookie."""
    person = await person_seen(db, issuer, {"sub": subject, "preferred_username": subject})
    grant = Grant(role, queues, (RULE,))
    auth_time = datetime.now(UTC) - signed_in_ago
    session = await start_session(
        db,
        person,
        (grant,),
        LoginFacts(provider_sid or f"sid-{subject}", None, None, auth_time, acr),
        AuthSettings(),
    )
    principal = Principal(
        person.user_name,
        role,
        frozenset(queues),
        grants=(grant,),
        authentication=Authentication(
            kind=CredentialKind.SESSION,
            issuer=issuer,
            subject=subject,
            session_id=session.id,
            auth_time=auth_time,
            acr=acr,
            rules=(RULE,),
        ),
    )
    return await recorded(db, principal), person, session


async def with_cli_token(db: Database, principal: Principal) -> Principal:
    """The same person acting through a CLI token: no issuer, no sign-in time."""
    return await recorded(
        db,
        dataclasses.replace(
            principal, authentication=Authentication(kind=CredentialKind.CLI_TOKEN)
        ),
    )
