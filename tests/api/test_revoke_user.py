"""`casework user revoke` as the operator runs it (a real process), and the revokeUser
mutation with its refusal for anyone but an admin: one routine behind both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from server.domain.identity.sessions import live_session
from server.domain.identity.tokens import authenticate
from server.domain.model import Role
from server.domain.review.leases import claim_next
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import casework, enqueue
from tests.conftest import TestDatabase, token_maker
from tests.integration.identity_helpers import signed_in

REVOKE = """
mutation($input: RevokeUserInput!) {
  revokeUser(input: $input) {
    __typename
    ... on UserRevoked { user sessionsEnded tokensRevoked leasesReleased releasedItemIds }
    ... on UserNotFound { user message }
    ... on Error { message }
  }
}
"""


async def test_casework_user_revoke_ends_what_the_person_holds(
    test_database: TestDatabase,
    tmp_path: Path,
    db: Database,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
) -> None:
    nina, _, session = await signed_in(db, "nina")
    await signed_in(db, "nina")  # a second browser
    cli = await token_maker(owner_db)("nina", Role.REVIEWER, "kyc")
    await enqueue(gql, tokens, "cust-1")
    held = await claim_next(db, nina, kyc)
    assert hasattr(held, "lease_token"), held

    run = await casework(test_database, tmp_path, "user revoke --user nina --reason 'left'")

    assert run.code == 0, run.stderr
    assert "revoked user 'nina': 2 session(s) ended, 1 token(s) revoked, 1 lease(s)" in run.stdout
    assert f"(items: {held.item.id})" in run.stdout  # type: ignore[union-attr]
    assert await live_session(db, session.secret) is None
    assert await authenticate(db, cli) is None
    assert await authenticate(db, tokens.reviewer) is not None
    body = await owner_conn.fetchval("SELECT body FROM item_events WHERE kind = 'revoked'")
    assert body == "access revoked: cli: left"
    source, by = await owner_conn.fetchrow("SELECT source, revoked_by FROM principal_revocations")
    assert source == "cli"
    assert by.startswith("cli")


async def test_an_unknown_user_is_a_one_line_error(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    run = await casework(test_database, tmp_path, "user revoke --user nobody")
    assert run.code == 2
    assert run.stderr.strip().splitlines() == [
        "casework: error: no user 'nobody': no sign-in, token or lease goes by that name"
    ]


async def test_revoke_user_is_an_admins_and_answers_with_a_union(
    gql: GraphQL, tokens: Tokens, db: Database
) -> None:
    await signed_in(db, "sam")

    async def revoke(token: str, user: str) -> dict[str, Any]:
        body = await gql(token, REVOKE, input={"user": user, "reason": "offboarded"})
        assert "errors" not in body, body
        answer: dict[str, Any] = body["data"]["revokeUser"]
        return answer

    assert (await revoke(tokens.manager, "sam"))["__typename"] == "NotPermitted"
    assert await revoke(tokens.admin, "sam") == {
        "__typename": "UserRevoked",
        "user": "sam",
        "sessionsEnded": 1,
        "tokensRevoked": 0,
        "leasesReleased": 0,
        "releasedItemIds": [],
    }
    missing = await revoke(tokens.admin, "nobody")
    assert (missing["__typename"], missing["user"]) == ("UserNotFound", "nobody")
    # The admin's own token still works; the manager's refusal revoked nothing.
    assert await authenticate(db, tokens.admin) is not None
