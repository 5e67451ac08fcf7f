"""The payload policy over HTTP, as an admin's script and an integration send it."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.api.conftest import GraphQL
from tests.api.helpers import statements_of
from tests.privacy.http import (
    CANARY_PASSWORD,
    ENQUEUE,
    KYC_RULES,
    QUEUE_POLICY,
    SET_POLICY,
    PolicyTokens,
    set_policy,
)


async def test_an_admin_sets_a_policy_and_the_queue_reads_it_back(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    first = await set_policy(gql, tokens.admin)

    assert first["__typename"] == "PrivacyPolicy", first
    assert first["queue"] == "kyc"
    assert first["version"] == 1
    assert first["unlisted"] == "DROP"
    assert first["createdBy"] == "ada"
    assert first["createdAt"] is not None
    assert first["retentionClass"] is None
    assert first["fields"] == sorted(KYC_RULES, key=lambda rule: rule["path"])
    # The domain's defaults, as stored.
    assert first["revealRoles"] == ["APPROVER", "COMPLIANCE", "REVIEWER"]
    assert {v["role"]: v["classes"] for v in first["visible"]} == {
        "ADMIN": ["PUBLIC", "REFERENCE"],
        "APPROVER": ["PERSONAL", "PUBLIC", "REFERENCE"],
        "COMPLIANCE": ["PERSONAL", "PUBLIC", "REFERENCE"],
        "INTEGRATION": ["PUBLIC", "REFERENCE"],
        "MANAGER": ["PUBLIC", "REFERENCE"],
        "REVIEWER": ["PERSONAL", "PUBLIC", "REFERENCE"],
    }

    second = await set_policy(
        gql,
        tokens.admin,
        unlisted="REFUSE",
        visible=[{"role": "REVIEWER", "classes": ["PUBLIC", "PERSONAL"]}],
        revealRoles=["COMPLIANCE"],
    )

    assert second["__typename"] == "PrivacyPolicy", second
    assert second["version"] == 2
    assert second["visible"] == [{"role": "REVIEWER", "classes": ["PERSONAL", "PUBLIC"]}]
    assert second["revealRoles"] == ["COMPLIANCE"]
    body = await gql(tokens.reviewer, QUEUE_POLICY, name="kyc")
    assert body["data"]["queue"]["privacyPolicy"] == {
        "version": 2,
        "unlisted": "REFUSE",
        "retentionClass": None,
        "fields": second["fields"],
        "visible": second["visible"],
    }
    logged = await owner_conn.fetch(
        "SELECT action, actor, actor_role, queue, detail->>'version' AS version "
        "FROM privacy_log ORDER BY id"
    )
    assert [tuple(row) for row in logged] == [
        ("policy_set", "ada", "admin", "kyc", "1"),
        ("policy_set", "ada", "admin", "kyc", "2"),
    ]


async def test_a_queue_without_a_policy_reads_null_and_a_page_of_queues_reads_policies_once(
    gql: GraphQL,
    tokens: PolicyTokens,
    kyc: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (await set_policy(gql, tokens.admin))["__typename"] == "PrivacyPolicy"

    data, statements = await statements_of(
        gql,
        tokens.admin,
        "{ queues { name privacyPolicy { version } } }",
        monkeypatch,
    )

    policies = {q["name"]: q["privacyPolicy"] for q in data["queues"]}
    assert len(policies) > 2  # the built-in queues too
    assert policies["kyc"] == {"version": 1}
    assert [name for name, policy in policies.items() if policy is not None] == ["kyc"]
    assert statements.count("policies_current_by_queues") == 1


@pytest.mark.parametrize("role", ["reviewer", "manager", "integration", "compliance"])
async def test_only_an_admin_sets_a_policy(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, owner_conn: asyncpg.Connection, role: str
) -> None:
    result = await set_policy(gql, getattr(tokens, role))

    assert result["__typename"] == "NotPermitted", result
    assert result["message"] == "only an admin may set a queue's privacy policy"
    assert await owner_conn.fetchval("SELECT count(*) FROM privacy_policies") == 0
    assert await owner_conn.fetchval("SELECT count(*) FROM privacy_log") == 0


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ([{"path": "applicant..name", "class": "PERSONAL"}], "fields", "none empty"),
        ([{"path": "", "class": "PUBLIC"}], "fields", "none empty"),
        (
            [
                {"path": "applicant", "class": "PERSONAL"},
                {"path": "applicant.name", "class": "PERSONAL"},
            ],
            "fields",
            "lies inside 'applicant'",
        ),
        (
            [{"path": "a", "class": "PUBLIC"}, {"path": "a", "class": "PERSONAL"}],
            "fields",
            "each path is listed once",
        ),
        ([], "fields", "at least one path"),
    ],
)
async def test_bad_paths_are_refused_with_the_field_named(
    gql: GraphQL,
    tokens: PolicyTokens,
    kyc: str,
    owner_conn: asyncpg.Connection,
    fields: list[dict[str, str]],
    field: str,
    says: str,
) -> None:
    body = await gql(tokens.admin, SET_POLICY, input={"queue": "kyc", "fields": fields})
    result = body["data"]["setPrivacyPolicy"]

    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == field
    assert says in result["message"]
    assert await owner_conn.fetchval("SELECT count(*) FROM privacy_policies") == 0


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"visible": [{"role": "REVIEWER", "classes": ["SENSITIVE"]}]}, "visible"),
        ({"visible": [{"role": "REVIEWER", "classes": ["SECRET"]}]}, "visible"),
        (
            {
                "visible": [
                    {"role": "REVIEWER", "classes": ["PUBLIC"]},
                    {"role": "REVIEWER", "classes": ["PERSONAL"]},
                ]
            },
            "visible",
        ),
        ({"retentionClass": "no-such-class"}, "retentionClass"),
    ],
)
async def test_a_policy_that_would_show_too_much_or_names_an_unknown_class_is_refused(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, extra: dict[str, Any], field: str
) -> None:
    result = await set_policy(gql, tokens.admin, **extra)

    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == field


async def test_a_policy_on_an_unknown_queue_is_refused(gql: GraphQL, tokens: PolicyTokens) -> None:
    body = await gql(tokens.admin, SET_POLICY, input={"queue": "nope", "fields": KYC_RULES})

    assert body["data"]["setPrivacyPolicy"]["__typename"] == "InvalidInput", body


def kyc_item(key: str, subject: str | None, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "externalKey": key,
        "payload": {
            "applicant": {"name": "Zebediah Canarywood", "date_of_birth": "1961-04-12"},
            "document": {"id": "doc-1"},
            "risk_score": 71,
            **extra,
        },
    }
    if subject is not None:
        item["subjectRef"] = subject
    return item


async def test_enqueue_on_a_policy_queue_drops_unlisted_paths_and_names_them(
    gql: GraphQL, tokens: PolicyTokens, kyc: str
) -> None:
    await set_policy(gql, tokens.admin)

    body = await gql(
        tokens.integration,
        ENQUEUE,
        queue="kyc",
        items=[kyc_item("app-1", "cust-1", nickname="Zeb", extra={"a": 1})],
    )

    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "EnqueuedItems", result
    [entry] = result["items"]
    assert entry["created"] is True
    assert entry["droppedPaths"] == ["nickname", "extra"]
    assert entry["item"]["payload"] == {"document": {"id": "doc-1"}, "risk_score": 71}


async def test_enqueue_with_a_secret_is_refused_naming_the_path_never_the_value(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    await set_policy(gql, tokens.admin)

    body = await gql(
        tokens.integration,
        ENQUEUE,
        queue="kyc",
        items=[kyc_item("app-1", "cust-1", credentials={"password": CANARY_PASSWORD})],
    )

    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == "items[0].payload"
    assert "credentials.password" in result["message"]
    assert CANARY_PASSWORD not in str(body)
    assert await owner_conn.fetchval("SELECT count(*) FROM review_items") == 0


async def test_enqueue_on_a_policy_queue_needs_a_subject_ref(
    gql: GraphQL, tokens: PolicyTokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    await set_policy(gql, tokens.admin)

    body = await gql(tokens.integration, ENQUEUE, queue="kyc", items=[kyc_item("app-1", None)])

    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == "items[0].subjectRef"
    assert await owner_conn.fetchval("SELECT count(*) FROM review_items") == 0


async def test_unlisted_paths_refuse_the_enqueue_when_the_policy_says_so(
    gql: GraphQL, tokens: PolicyTokens, kyc: str
) -> None:
    await set_policy(gql, tokens.admin, unlisted="REFUSE")

    body = await gql(
        tokens.integration, ENQUEUE, queue="kyc", items=[kyc_item("app-1", "c", nickname="Zeb")]
    )

    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "InvalidInput", result
    assert "'nickname'" in result["message"] or "nickname" in result["message"]
    assert "Zeb" not in result["message"]
