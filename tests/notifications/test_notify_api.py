"""Notification channels and rules through GraphQL: an admin's registry with result unions
naming the field at fault, a target shown redacted, a channel kept while rules use it, and
who may. Against the real app in-process, on a real database."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from tests.api import conftest as api_fixtures
from tests.api.conftest import GraphQL, Tokens
from tests.conftest import reviewer
from tests.integration.helpers import claim, decide, enqueue_one

client = api_fixtures.client
gql = api_fixtures.gql
tokens = api_fixtures.tokens
kyc = api_fixtures.kyc

SLACK_URL = "https://hooks.slack.example/services/T000/B000/XXXXsecretXXXX"
CHANNEL = "id name kind target ratePerMinute digestMinutes enabled rules pendingNotifications"
RULE = "id name event queues workflows unclaimedAfterSeconds channelId channelName enabled"
ERRORS = "... on Error { __typename message } ... on InvalidInput { field }"
REFUSALS = "... on Error { __typename message }"

CREATE_CHANNEL = f"""
mutation($input: CreateNotificationChannelInput!) {{
  result: createNotificationChannel(input: $input) {{
    __typename ... on NotificationChannel {{ {CHANNEL} }} {ERRORS}
  }}
}}"""
UPDATE_CHANNEL = f"""
mutation($id: ID!, $input: UpdateNotificationChannelInput!) {{
  result: updateNotificationChannel(id: $id, input: $input) {{
    __typename ... on NotificationChannel {{ {CHANNEL} }} {ERRORS}
  }}
}}"""
DELETE_CHANNEL = f"""
mutation($id: ID!) {{
  result: deleteNotificationChannel(id: $id) {{
    __typename ... on NotificationChannel {{ {CHANNEL} }} {ERRORS}
  }}
}}"""
CHANNELS = f"""
query {{ result: notificationChannels {{
  __typename ... on NotificationChannelList {{ channels {{ {CHANNEL} }} }} {REFUSALS}
}} }}"""
CREATE_RULE = f"""
mutation($input: CreateNotificationRuleInput!) {{
  result: createNotificationRule(input: $input) {{
    __typename ... on NotificationRule {{ {RULE} }} {ERRORS}
  }}
}}"""
UPDATE_RULE = f"""
mutation($id: ID!, $input: UpdateNotificationRuleInput!) {{
  result: updateNotificationRule(id: $id, input: $input) {{
    __typename ... on NotificationRule {{ {RULE} }} {ERRORS}
  }}
}}"""
DELETE_RULE = f"""
mutation($id: ID!) {{
  result: deleteNotificationRule(id: $id) {{
    __typename ... on NotificationRule {{ {RULE} }} {REFUSALS}
  }}
}}"""
RULES = f"""
query {{ result: notificationRules {{
  __typename ... on NotificationRuleList {{ rules {{ {RULE} }} }} {REFUSALS}
}} }}"""


async def result(gql: GraphQL, token: str, query: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["result"]
    return answer


async def test_an_admin_keeps_channels_and_rules(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    made = await result(
        gql,
        tokens.admin,
        CREATE_CHANNEL,
        input={"name": "risk-team", "kind": "SLACK", "target": SLACK_URL, "ratePerMinute": 5},
    )
    assert made["__typename"] == "NotificationChannel", made
    assert made["target"] == "https://hooks.slack.example/…"
    assert "secret" not in str(made)

    rule = await result(
        gql,
        tokens.admin,
        CREATE_RULE,
        input={"name": "late-kyc", "event": "OVERDUE", "queues": [kyc], "channelId": made["id"]},
    )
    assert rule["__typename"] == "NotificationRule", rule
    assert (rule["channelName"], rule["queues"], rule["workflows"]) == ("risk-team", [kyc], None)

    refused = await result(gql, tokens.admin, DELETE_CHANNEL, id=made["id"])
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "id")
    assert "late-kyc" in refused["message"]

    changed = await result(
        gql, tokens.admin, UPDATE_RULE, id=rule["id"], input={"event": "ESCALATED"}
    )
    assert changed["event"] == "ESCALATED"
    digest = await result(
        gql, tokens.admin, UPDATE_CHANNEL, id=made["id"], input={"digestMinutes": 15}
    )
    assert (digest["digestMinutes"], digest["rules"]) == (15, ["late-kyc"])
    listed = await result(gql, tokens.admin, CHANNELS)
    assert [c["name"] for c in listed["channels"]] == ["risk-team"]
    assert [r["name"] for r in (await result(gql, tokens.admin, RULES))["rules"]] == ["late-kyc"]

    assert (await result(gql, tokens.admin, DELETE_RULE, id=rule["id"]))["name"] == "late-kyc"
    gone = await result(gql, tokens.admin, DELETE_CHANNEL, id=made["id"])
    assert gone["__typename"] == "NotificationChannel"
    assert (await result(gql, tokens.admin, CHANNELS))["channels"] == []


@pytest.mark.parametrize(
    ("given", "field", "says"),
    [
        ({"kind": "EMAIL", "target": "not-an-address"}, "target", "e-mail addresses"),
        ({"target": "ftp://hooks.example/x"}, "target", ""),
        ({"ratePerMinute": 0}, "ratePerMinute", "1 to 600"),
        ({"digestMinutes": 2000}, "digestMinutes", "1 to 1440"),
        ({"name": ""}, "name", ""),
    ],
)
async def test_a_channel_refused_names_the_field(
    gql: GraphQL, tokens: Tokens, kyc: str, given: dict[str, Any], field: str, says: str
) -> None:
    refused = await result(
        gql,
        tokens.admin,
        CREATE_CHANNEL,
        input={"name": "risk-team", "kind": "SLACK", "target": SLACK_URL, **given},
    )
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", field), refused
    assert says in refused["message"]
    assert (await result(gql, tokens.admin, CHANNELS))["channels"] == []


@pytest.mark.parametrize(
    ("given", "field", "says"),
    [
        ({"event": "UNCLAIMED"}, "unclaimedAfterSeconds", "UNCLAIMED rule takes"),
        ({"unclaimedAfterSeconds": 600}, "unclaimedAfterSeconds", "only an UNCLAIMED"),
        ({"event": "NEEDS_APPROVAL"}, "queues", "rules name workflows"),
        ({"queues": ["nope"]}, "queues", "unknown queue"),
        ({"queues": None, "workflows": ["nope"]}, "workflows", "unknown workflow"),
        ({"channelId": "00000000-0000-0000-0000-000000000000"}, "channelId", "unknown channel"),
    ],
)
async def test_a_rule_refused_names_the_field(
    gql: GraphQL, tokens: Tokens, kyc: str, given: dict[str, Any], field: str, says: str
) -> None:
    made = await result(
        gql,
        tokens.admin,
        CREATE_CHANNEL,
        input={"name": "risk-team", "kind": "SLACK", "target": SLACK_URL},
    )
    rule = {"name": "r", "event": "OVERDUE", "queues": [kyc], "channelId": made["id"], **given}
    refused = await result(gql, tokens.admin, CREATE_RULE, input=rule)
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", field), refused
    assert says in refused["message"]
    assert (await result(gql, tokens.admin, RULES))["rules"] == []


async def test_only_an_admin_may(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    for token in (tokens.reviewer, tokens.manager, tokens.integration):
        assert (await result(gql, token, CHANNELS))["__typename"] == "NotPermitted"
        assert (await result(gql, token, RULES))["__typename"] == "NotPermitted"
        refused = await result(
            gql,
            token,
            CREATE_CHANNEL,
            input={"name": "x", "kind": "SLACK", "target": SLACK_URL},
        )
        assert refused["__typename"] == "NotPermitted"


ITEM = """
query($id: ID!) {
  item(id: $id) {
    events { edges { node { kind actor notificationRule notificationEvent
                            notificationChannel notificationState notificationSentAt } } }
  }
}"""


async def test_an_items_reader_sees_its_notifications_in_its_timeline(
    gql: GraphQL, tokens: Tokens, kyc: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    made = await result(
        gql,
        tokens.admin,
        CREATE_CHANNEL,
        input={"name": "risk-team", "kind": "TEAMS", "target": SLACK_URL},
    )
    await result(
        gql,
        tokens.admin,
        CREATE_RULE,
        input={
            "name": "up",
            "event": "APPLICATION_FAILED",
            "queues": [kyc],
            "channelId": made["id"],
        },
    )
    item = await enqueue_one(db, kyc, "app-1")
    rita = reviewer("rita", "kyc", "kyc-senior")
    decided = await decide(db, rita, await claim(db, rita))
    # Its effect fails for good.
    await owner_conn.execute(
        "UPDATE decision_applications SET state = 'failed', attempts = 8 WHERE decision_id = $1",
        decided.id,
    )

    body = await gql(tokens.reviewer, ITEM, id=str(item.id))
    assert "errors" not in body, body
    found = body["data"]["item"]
    notified = [e["node"] for e in found["events"]["edges"] if e["node"]["kind"] == "NOTIFIED"]
    assert notified == [
        {
            "kind": "NOTIFIED",
            "actor": "casework",
            "notificationRule": "up",
            "notificationEvent": "APPLICATION_FAILED",
            "notificationChannel": "risk-team",
            "notificationState": "PENDING",
            "notificationSentAt": None,
        }
    ]
