"""Retention classes over HTTP: defined once, by admins and compliance officers."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.api.conftest import GraphQL
from tests.privacy.http import (
    AML_BASIS,
    DEFINE_CLASS,
    PolicyTokens,
    set_policy,
)


@pytest.mark.parametrize("role", ["admin", "compliance"])
async def test_a_retention_class_is_defined_once_and_a_policy_may_name_it(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, owner_conn: asyncpg.Connection, role: str
) -> None:
    token = getattr(tokens, role)
    definition = {"name": "aml-5y", "keepDays": 1826, "anchor": "RELATIONSHIP_ENDED"}

    body = await gql(token, DEFINE_CLASS, input={**definition, "basis": AML_BASIS})

    defined = body["data"]["defineRetentionClass"]
    assert defined == {
        "__typename": "RetentionClass",
        "name": "aml-5y",
        "keepSeconds": 1826 * 86400,
        "keepDays": 1826.0,
        "anchor": "RELATIONSHIP_ENDED",
        "basis": AML_BASIS,
        "createdBy": {"admin": "ada", "compliance": "cora"}[role],
    }
    again = await gql(
        tokens.admin,
        DEFINE_CLASS,
        input={"name": "aml-5y", "keepSeconds": 60, "anchor": "ENQUEUED", "basis": "shorter"},
    )
    refused = again["data"]["defineRetentionClass"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == "name"
    assert "never redefined" in refused["message"]

    listed = await gql(tokens.reviewer, "{ retentionClasses { name keepSeconds anchor } }")
    assert listed["data"]["retentionClasses"] == [
        {"name": "aml-5y", "keepSeconds": 1826 * 86400, "anchor": "RELATIONSHIP_ENDED"}
    ]
    logged = await owner_conn.fetch("SELECT action, actor, detail FROM privacy_log ORDER BY id")
    assert len(logged) == 1
    assert logged[0]["action"] == "retention_class_set"
    assert logged[0]["actor"] == {"admin": "ada", "compliance": "cora"}[role]

    policy = await set_policy(gql, tokens.admin, retentionClass="aml-5y")
    assert policy["retentionClass"] == "aml-5y"


@pytest.mark.parametrize(
    ("definition", "field"),
    [
        ({"name": "AML 5y", "keepDays": 1}, "name"),
        ({"name": "aml", "keepDays": 1, "keepSeconds": 60}, "keepDays"),
        ({"name": "aml"}, "keepDays"),
        ({"name": "aml", "keepSeconds": 0}, "keepSeconds"),
        ({"name": "aml", "keepDays": 100_000}, "keepDays"),
        ({"name": "aml", "keepDays": 1, "basis": "   "}, "basis"),
    ],
)
async def test_a_bad_retention_class_is_refused(
    gql: GraphQL,
    tokens: PolicyTokens,
    owner_conn: asyncpg.Connection,
    definition: dict[str, Any],
    field: str,
) -> None:
    body = await gql(
        tokens.admin,
        DEFINE_CLASS,
        input={"anchor": "DECIDED", "basis": "contract", **definition},
    )

    result = body["data"]["defineRetentionClass"]
    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == field
    assert await owner_conn.fetchval("SELECT count(*) FROM retention_classes") == 0


@pytest.mark.parametrize("role", ["reviewer", "manager", "integration"])
async def test_only_admins_and_compliance_define_retention_classes(
    gql: GraphQL, tokens: PolicyTokens, owner_conn: asyncpg.Connection, role: str
) -> None:
    body = await gql(
        getattr(tokens, role),
        DEFINE_CLASS,
        input={"name": "short", "keepDays": 30, "anchor": "DECIDED", "basis": "contract"},
    )

    assert body["data"]["defineRetentionClass"]["__typename"] == "NotPermitted", body
    assert await owner_conn.fetchval("SELECT count(*) FROM retention_classes") == 0
    assert await owner_conn.fetchval("SELECT count(*) FROM privacy_log") == 0
