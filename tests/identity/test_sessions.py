"""Console sessions in the database: a session resolves to its person under one of its
grants, and stops resolving once it ends, times out or its person is revoked; `casework
session list|revoke` shows and ends them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import asyncpg

from server.config import AuthMode, AuthSettings
from server.domain.identity.people import person_seen
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.identity.sessions import LoginFacts, StartedSession, start_session
from server.domain.model import CredentialKind, Grant, Role
from server.store import sql
from server.store.database import Database
from tests.api.helpers import casework
from tests.conftest import TestDatabase

ISSUER = "https://idp.example.test"
GRANTS = (
    Grant(Role.REVIEWER, ("kyc",), ("kyc reviewers",)),
    Grant(Role.APPROVER, (), ("approvers",)),
)
SSO = AuthSettings(
    modes=frozenset({AuthMode.OIDC}),
    rules_file=Path("unused.toml"),
    oidc_issuer=ISSUER,
    oidc_client_id="casework-console",
    oidc_audience="https://casework.test/api",
)
FACTS = LoginFacts(
    provider_sid="sid-1", id_token=None, refresh_token=None, auth_time=None, acr=None
)


async def signed_in(db: Database, sub: str, *, settings: AuthSettings = SSO) -> StartedSession:
    person = await person_seen(db, ISSUER, {"sub": sub, "preferred_username": sub, "name": sub})
    return await start_session(db, person, GRANTS, FACTS, settings)


def resolver(db: Database) -> CredentialResolver:
    # No cache: each call asks the database, as a process does once its window has passed.
    return CredentialResolver(db, ttl=0, auth=SSO)


async def test_a_session_resolves_to_its_person_under_the_first_grant(db: Database) -> None:
    session = await signed_in(db, "alice")

    principal = await resolver(db).resolve(Credentials(session=session.secret))

    assert principal is not None
    assert (principal.user, principal.role, principal.queues) == (
        "alice",
        Role.REVIEWER,
        frozenset({"kyc"}),
    )
    assert principal.grants == GRANTS
    assert principal.authentication is not None
    assert principal.authentication.kind is CredentialKind.SESSION
    assert principal.authentication.session_id == session.id
    assert principal.authentication.rules == ("kyc reviewers",)
    # Recorded, so what this principal decides can point at how it authenticated.
    assert principal.authentication_id is not None


async def test_a_session_acts_under_another_grant_on_request(db: Database) -> None:
    session = await signed_in(db, "bob")

    principal = await resolver(db).resolve(Credentials(session=session.secret, role="approver"))

    assert principal is not None
    assert principal.role is Role.APPROVER


async def test_only_the_hash_of_a_session_is_stored(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    session = await signed_in(db, "carol")

    rows = await owner_conn.fetch("SELECT * FROM sessions")
    assert all(session.secret not in str(value) for row in rows for value in row.values())


async def test_a_session_ends_when_its_person_is_revoked(db: Database) -> None:
    session = await signed_in(db, "dave")
    await db.fetchrow(sql.identity.PRINCIPAL_REVOKE, user_name="dave")

    assert await resolver(db).resolve(Credentials(session=session.secret)) is None
    # A login after the revocation makes a session that works.
    again = await signed_in(db, "dave")
    assert await resolver(db).resolve(Credentials(session=again.secret)) is not None


async def test_an_idle_session_times_out(db: Database, owner_conn: asyncpg.Connection) -> None:
    session = await signed_in(db, "erin")
    # The idle clock is the database's: the last use is moved back past the timeout.
    await owner_conn.execute(
        "UPDATE sessions SET last_seen_at = now() - make_interval(secs => idle_seconds + 1)"
    )

    assert await resolver(db).resolve(Credentials(session=session.secret)) is None


async def test_a_session_ends_at_its_absolute_lifetime(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    session = await signed_in(db, "fay")
    await owner_conn.execute("UPDATE sessions SET expires_at = now() - interval '1 second'")

    assert await resolver(db).resolve(Credentials(session=session.secret)) is None


async def test_sessions_are_ignored_where_single_sign_on_is_off(db: Database) -> None:
    session = await signed_in(db, "gus")
    tokens_only = CredentialResolver(
        db, ttl=0, auth=dataclasses.replace(SSO, modes=frozenset({AuthMode.TOKEN}))
    )

    assert await tokens_only.resolve(Credentials(session=session.secret)) is None


async def test_session_list_and_revoke_as_the_operator_runs_them(
    test_database: TestDatabase, tmp_path: Path, db: Database
) -> None:
    session = await signed_in(db, "hana")

    listed = await casework(test_database, tmp_path, "session list")
    assert listed.code == 0, listed.stderr
    header, line = listed.stdout.splitlines()
    assert header.split()[:3] == ["ID", "USER", "NAME"]
    assert line.split()[:2] == [str(session.id), "hana"]
    assert "reviewer in kyc; approver in (all)" in line
    assert line.endswith("live")

    revoked = await casework(test_database, tmp_path, f"session revoke {session.id}")
    assert revoked.code == 0, revoked.stderr
    assert f"ended session {session.id} of user 'hana'" in revoked.stdout
    assert await resolver(db).resolve(Credentials(session=session.secret)) is None

    again = await casework(test_database, tmp_path, f"session revoke {session.id}")
    assert "had ended already" in again.stdout
    assert (await casework(test_database, tmp_path, "session list")).stdout.splitlines()[1:] == []
    everything = await casework(test_database, tmp_path, "session list --all")
    assert "ended: revoked by an operator" in everything.stdout

    missing = await casework(test_database, tmp_path, "session revoke 999999")
    assert missing.code == 2
    assert "there is no session 999999" in missing.stderr
    assert "Traceback" not in missing.stderr
