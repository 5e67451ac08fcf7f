"""The provider's access tokens at the API, against a real OpenID provider: people and
integrations resolve to principals through the rules, act under one of their grants at a
time, and are refused when no rule grants them anything or their access was revoked."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from server.config import AuthMode, AuthSettings, Settings
from server.domain.model import Role
from server.domain.review.queues import QueueSettings, configure_queue
from server.store import sql
from server.store.database import Database
from tests.api.conftest import in_process_client
from tests.conftest import ADMIN, TestDatabase, token_maker
from tests.identity.oidc import OidcProvider

RULES = """
[[rule]]
name = "kyc reviewers"
claim = "groups"
contains = "kyc-reviewers"
role = "reviewer"
queues = ["kyc*"]

[[rule]]
name = "exception approvers"
claim = "groups"
contains = "approvers"
role = "approver"

[[rule]]
name = "integrations"
claim = "client_id"
equals = "casework-integration"
role = "integration"
"""

ME = "{ me { user role queues } }"


def sso_settings(provider: OidcProvider, rules: Path, *, modes: set[AuthMode]) -> Settings:
    return dataclasses.replace(
        Settings.from_env(),
        # Every request asks afresh: a revocation shows at once, not after the cache window.
        token_cache_seconds=0,
        auth=AuthSettings(
            modes=frozenset(modes),
            rules_file=rules,
            oidc_issuer=provider.issuer,
            oidc_client_id=provider.console.client_id,
            oidc_client_secret=provider.console.client_secret,
            oidc_audience=provider.api_audience,
        ),
    )


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return path


@pytest.fixture
async def api(
    test_database: TestDatabase, db: Database, oidc_provider: OidcProvider, rules_file: Path
) -> AsyncIterator[httpx.AsyncClient]:
    for queue in ("kyc", "kyc-senior", "fraud"):
        result = await configure_queue(db, ADMIN, QueueSettings(queue))
        assert not hasattr(result, "message"), result
    settings = sso_settings(oidc_provider, rules_file, modes={AuthMode.OIDC, AuthMode.TOKEN})
    async with in_process_client(test_database, dev=False, settings=settings) as client:
        yield client


async def ask(
    api: httpx.AsyncClient, token: str, query: str = ME, *, role: str | None = None
) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"}
    if role is not None:
        headers["x-casework-role"] = role
    return await api.post("/graphql", json={"query": query}, headers=headers)


async def person_token(provider: OidcProvider, sub: str, groups: list[str]) -> str:
    provider.set_account(sub, {"groups": groups, "name": sub.title(), "preferred_username": sub})
    return (await provider.code_flow_tokens(sub)).access_token


async def test_a_persons_access_token_acts_under_the_first_grant(
    api: httpx.AsyncClient, oidc_provider: OidcProvider
) -> None:
    token = await person_token(oidc_provider, "alice", ["kyc-reviewers", "approvers"])

    answer = await ask(api, token)

    assert answer.status_code == 200, answer.text
    me = answer.json()["data"]["me"]
    assert me["user"] == "alice"
    assert me["role"] == "reviewer"
    # kyc* reads the queues there are; fraud is not one it matches.
    assert {"kyc", "kyc-senior"} <= set(me["queues"])
    assert "fraud" not in me["queues"]


async def test_the_role_header_chooses_among_the_grants(
    api: httpx.AsyncClient, oidc_provider: OidcProvider
) -> None:
    token = await person_token(oidc_provider, "bob", ["kyc-reviewers", "approvers"])

    answer = await ask(api, token, role="approver")

    assert answer.json()["data"]["me"]["role"] == "approver"


async def test_a_role_not_granted_is_refused(
    api: httpx.AsyncClient, oidc_provider: OidcProvider
) -> None:
    token = await person_token(oidc_provider, "carol", ["kyc-reviewers"])

    answer = await ask(api, token, role="admin")

    assert answer.status_code == 403
    assert answer.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert "admin" in answer.json()["errors"][0]["message"]


async def test_an_identity_no_rule_grants_is_refused_by_default(
    api: httpx.AsyncClient, oidc_provider: OidcProvider
) -> None:
    token = await person_token(oidc_provider, "dave", ["marketing"])

    answer = await ask(api, token)

    assert answer.status_code == 403
    assert "no rule grants" in answer.json()["errors"][0]["message"]


async def test_a_client_credentials_token_maps_to_its_role_like_a_person(
    api: httpx.AsyncClient, oidc_provider: OidcProvider, db: Database
) -> None:
    token = await oidc_provider.client_credentials_token()

    answer = await ask(api, token)

    assert answer.json()["data"]["me"]["role"] == "integration"
    row = await db.fetchrow(
        sql.identity.PRINCIPAL_GET, issuer=oidc_provider.issuer, subject="casework-integration"
    )
    assert row is not None
    assert row["kind"] == "machine"


async def test_a_token_issued_before_the_persons_revocation_is_refused(
    api: httpx.AsyncClient, oidc_provider: OidcProvider, db: Database
) -> None:
    token = await person_token(oidc_provider, "erin", ["kyc-reviewers"])
    assert (await ask(api, token)).status_code == 200

    await db.fetchrow(sql.identity.PRINCIPAL_REVOKE, user_name="erin")

    assert (await ask(api, token)).status_code == 401
    # A token issued after the revocation works: revocation ends what was, not who they are.
    assert (
        await ask(api, await person_token(oidc_provider, "erin", ["kyc-reviewers"]))
    ).status_code == 200


async def test_an_id_token_is_not_accepted_as_an_access_token(
    api: httpx.AsyncClient, oidc_provider: OidcProvider
) -> None:
    oidc_provider.set_account("fay", {"groups": ["kyc-reviewers"], "preferred_username": "fay"})
    tokens = await oidc_provider.code_flow_tokens("fay")
    assert tokens.id_token is not None

    assert (await ask(api, tokens.id_token)).status_code == 401


async def test_cli_tokens_are_refused_where_token_sign_in_is_off(
    test_database: TestDatabase,
    owner_db: Database,
    oidc_provider: OidcProvider,
    rules_file: Path,
) -> None:
    cli_token = await token_maker(owner_db)("gus", Role.MANAGER)
    settings = sso_settings(oidc_provider, rules_file, modes={AuthMode.OIDC})
    async with in_process_client(test_database, dev=False, settings=settings) as api:
        assert (await ask(api, cli_token)).status_code == 401
    settings = sso_settings(oidc_provider, rules_file, modes={AuthMode.OIDC, AuthMode.TOKEN})
    async with in_process_client(test_database, dev=False, settings=settings) as api:
        assert (await ask(api, cli_token)).status_code == 200


async def test_the_same_token_under_two_roles_is_two_principals(
    api: httpx.AsyncClient, oidc_provider: OidcProvider, db: Database
) -> None:
    token = await person_token(oidc_provider, "hana", ["kyc-reviewers", "approvers"])

    assert (await ask(api, token)).json()["data"]["me"]["role"] == "reviewer"
    assert (await ask(api, token, role="approver")).json()["data"]["me"]["role"] == "approver"
    rows = await db.fetch(sql.identity.SESSIONS_LIST, include_ended=True)
    assert rows == []  # access tokens make no session
