"""Webhook endpoints through GraphQL: an admin's registry with result unions, who may, and
replay. Against the real app in-process, on a real database."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from server.domain.failures import InvalidInput
from server.domain.integrations import endpoints
from server.domain.integrations.endpoints import EndpointInput
from server.domain.model import Role
from server.store.database import Database
from tests.api import conftest as api_fixtures
from tests.api.conftest import GraphQL, Tokens
from tests.conftest import ADMIN, token_maker
from tests.exceptions import conftest as exception_fixtures
from tests.exceptions.conftest import WORKFLOW, People

client = api_fixtures.client
gql = api_fixtures.gql
tokens = api_fixtures.tokens
kyc = api_fixtures.kyc
people = exception_fixtures.people
supplier_workflow = exception_fixtures.supplier_workflow

URL = "https://hooks.example.com/casework"
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # 24 bytes of base64

ENDPOINT_FIELDS = """
id url description eventTypes queues workflows format legacyHeaders enabled disabledReason
disabledAt maxAttempts timeoutSeconds createdBy secrets { createdAt expiresAt }
pendingDeliveries failedDeliveries
"""
ERRORS = "... on Error { __typename message } ... on InvalidInput { field } "
# For the unions without InvalidInput.
REFUSALS = "... on Error { __typename message } "
CREATE = f"""
mutation($input: CreateWebhookEndpointInput!) {{
  result: createWebhookEndpoint(input: $input) {{
    __typename
    ... on WebhookEndpointWithSecret {{ secret endpoint {{ {ENDPOINT_FIELDS} }} }}
    {ERRORS}
  }}
}}
"""
LIST = f"""
query {{
  result: webhookEndpoints {{
    __typename ... on WebhookEndpointList {{ endpoints {{ {ENDPOINT_FIELDS} }} }} {REFUSALS}
  }}
}}
"""
ONE = f"""
query($id: ID!) {{
  result: webhookEndpoint(id: $id) {{
    __typename ... on WebhookEndpoint {{ {ENDPOINT_FIELDS} }} {REFUSALS}
    ... on NotFound {{ id }}
  }}
}}
"""
UPDATE = f"""
mutation($id: ID!, $input: UpdateWebhookEndpointInput!) {{
  result: updateWebhookEndpoint(id: $id, input: $input) {{
    __typename ... on WebhookEndpoint {{ {ENDPOINT_FIELDS} }} {ERRORS}
  }}
}}
"""
DISABLE = f"""
mutation($id: ID!, $reason: String) {{
  result: disableWebhookEndpoint(id: $id, reason: $reason) {{
    __typename ... on WebhookEndpoint {{ {ENDPOINT_FIELDS} }} {ERRORS}
  }}
}}
"""
ENABLE = f"""
mutation($id: ID!) {{
  result: enableWebhookEndpoint(id: $id) {{
    __typename ... on WebhookEndpoint {{ {ENDPOINT_FIELDS} }} {REFUSALS}
  }}
}}
"""
DELETE = f"""
mutation($id: ID!) {{
  result: deleteWebhookEndpoint(id: $id) {{
    __typename ... on WebhookEndpoint {{ id }} {REFUSALS}
  }}
}}
"""
ROTATE = f"""
mutation($id: ID!, $secret: String, $overlapHours: Int) {{
  result: rotateWebhookEndpointSecret(id: $id, secret: $secret, overlapHours: $overlapHours) {{
    __typename
    ... on WebhookEndpointWithSecret {{ secret endpoint {{ {ENDPOINT_FIELDS} }} }}
    {ERRORS}
  }}
}}
"""
DELIVERY_FIELDS = """
endpointId webhookId eventType itemId exceptionId state attempts nextAttemptAt inFlight
lastStatus lastError deliveredAt cursor
"""
DELIVERIES = f"""
query($id: ID!, $state: WebhookDeliveryState, $first: Int, $before: String) {{
  result: webhookDeliveries(endpointId: $id, state: $state, first: $first, before: $before) {{
    __typename ... on WebhookDeliveryList {{ deliveries {{ {DELIVERY_FIELDS} }} }} {REFUSALS}
  }}
}}
"""
REPLAY = f"""
mutation($id: ID!, $webhookId: String!) {{
  result: replayDelivery(endpointId: $id, webhookId: $webhookId) {{
    __typename ... on WebhookDelivery {{ {DELIVERY_FIELDS} }} {ERRORS}
  }}
}}
"""


async def result(gql: GraphQL, token: str, query: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["result"]
    return answer


def endpoint_input(**changes: Any) -> dict[str, Any]:
    return {"url": URL, "eventTypes": ["decision.effective"], "queues": ["kyc"], **changes}


async def test_an_admin_registers_reads_changes_disables_enables_and_deletes(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    made = await result(
        gql, tokens.admin, CREATE, input=endpoint_input(description="risk team's sink")
    )
    assert made["__typename"] == "WebhookEndpointWithSecret"
    assert made["secret"].startswith("whsec_")
    endpoint = made["endpoint"]
    assert endpoint["format"] == "STANDARD"
    assert endpoint["legacyHeaders"] is False
    assert endpoint["enabled"] is True
    assert endpoint["createdBy"] == "ada"
    assert endpoint["workflows"] is None
    assert [s["expiresAt"] for s in endpoint["secrets"]] == [None]
    listed = await result(gql, tokens.admin, LIST)
    assert [e["id"] for e in listed["endpoints"]] == [endpoint["id"]]
    # The secret is shown once: no read carries it.
    one = await result(gql, tokens.admin, ONE, id=endpoint["id"])
    assert made["secret"] not in str(one)
    assert one == {"__typename": "WebhookEndpoint", **endpoint}

    changed = await result(
        gql,
        tokens.admin,
        UPDATE,
        id=endpoint["id"],
        input={"eventTypes": ["decision.effective", "lease.lapsed"], "format": "CLOUDEVENTS"},
    )
    assert changed["eventTypes"] == ["decision.effective", "lease.lapsed"]
    assert changed["format"] == "CLOUDEVENTS"
    assert changed["url"] == URL

    disabled = await result(gql, tokens.admin, DISABLE, id=endpoint["id"], reason="migrating")
    assert disabled["enabled"] is False
    assert disabled["disabledReason"] == "disabled by ada: migrating"
    assert disabled["disabledAt"] is not None
    enabled = await result(gql, tokens.admin, ENABLE, id=endpoint["id"])
    assert (enabled["enabled"], enabled["disabledReason"]) == (True, None)

    rotated = await result(gql, tokens.admin, ROTATE, id=endpoint["id"], secret=SECRET)
    assert rotated["secret"] == SECRET
    assert len(rotated["endpoint"]["secrets"]) == 2
    assert rotated["endpoint"]["secrets"][1]["expiresAt"] is not None

    deleted = await result(gql, tokens.admin, DELETE, id=endpoint["id"])
    assert deleted == {"__typename": "WebhookEndpoint", "id": endpoint["id"]}
    gone = await result(gql, tokens.admin, ONE, id=endpoint["id"])
    assert gone["__typename"] == "NotFound"
    assert (await result(gql, tokens.admin, LIST))["endpoints"] == []


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"eventTypes": ["decision.made"]}, "eventTypes", "unknown event type 'decision.made'"),
        ({"eventTypes": []}, "eventTypes", "at least one event type"),
        ({"secret": "plain-old-secret-of-many-chars"}, "secret", "whsec_<base64"),
        ({"secret": "whsec_c2hvcnQ="}, "secret", "16 to 64 random"),
        ({"eventTypes": ["exception.raised"]}, "eventTypes", "scoped by workflow"),
        ({"queues": ["nope"]}, "queues", "unknown queue 'nope'"),
        ({"queues": []}, "queues", "name 1 to"),
        ({"workflows": ["supplier_onboarding"]}, "queues", "queues or workflows"),
        ({"url": "ftp://hooks.example.com/x"}, "url", "http(s) URL"),
        ({"url": "https://user:pw@hooks.example.com/x"}, "url", "user or password"),
        ({"description": "x" * 501}, "description", "at most 500"),
        ({"maxAttempts": 0}, "maxAttempts", "between 1 and 100"),
        ({"maxAttempts": 101}, "maxAttempts", "between 1 and 100"),
        ({"timeoutSeconds": 0}, "timeoutSeconds", "at most 60"),
        ({"timeoutSeconds": 60.5}, "timeoutSeconds", "at most 60"),
    ],
)
async def test_invalid_input_names_the_field_and_writes_nothing(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    changes: dict[str, Any],
    field: str,
    says: str,
) -> None:
    refused = await result(gql, tokens.admin, CREATE, input=endpoint_input(**changes))
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field
    assert says in refused["message"]
    assert (await result(gql, tokens.admin, LIST))["endpoints"] == []


async def test_attempts_and_timeout_are_set_kept_and_checked_on_update(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    made = await result(gql, tokens.admin, CREATE, input=endpoint_input())
    assert made["endpoint"]["maxAttempts"] == 8
    assert made["endpoint"]["timeoutSeconds"] == 10.0
    endpoint_id = made["endpoint"]["id"]
    changed = await result(
        gql, tokens.admin, UPDATE, id=endpoint_id, input={"maxAttempts": 3, "timeoutSeconds": 2.5}
    )
    assert changed["maxAttempts"] == 3
    assert changed["timeoutSeconds"] == 2.5
    # What an update leaves out stays; what it gives is checked as at creation.
    kept = await result(gql, tokens.admin, UPDATE, id=endpoint_id, input={"description": "x"})
    assert kept["maxAttempts"] == 3
    assert kept["timeoutSeconds"] == 2.5
    refused = await result(gql, tokens.admin, UPDATE, id=endpoint_id, input={"maxAttempts": 0})
    assert refused["__typename"] == "InvalidInput"
    assert refused["field"] == "maxAttempts"
    listed = (await result(gql, tokens.admin, LIST))["endpoints"]
    assert [(e["maxAttempts"], e["timeoutSeconds"]) for e in listed] == [(3, 2.5)]


async def test_an_endpoint_on_a_workflow_takes_exception_events(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    made = await result(
        gql,
        people.admin,
        CREATE,
        input={
            "url": URL,
            "eventTypes": ["exception.raised", "redrive.requested"],
            "workflows": [WORKFLOW],
        },
    )
    assert made["__typename"] == "WebhookEndpointWithSecret", made
    assert made["endpoint"]["workflows"] == [WORKFLOW]
    assert made["endpoint"]["queues"] is None
    review = await result(
        gql,
        people.admin,
        UPDATE,
        id=made["endpoint"]["id"],
        input={"eventTypes": ["decision.effective"]},
    )
    assert review["__typename"] == "InvalidInput"
    assert "scoped by queue" in review["message"]
    unknown = await result(
        gql, people.admin, CREATE, input={**endpoint_input(queues=None), "workflows": ["nope"]}
    )
    assert unknown["__typename"] == "InvalidInput"


async def test_only_admins_and_only_in_their_scope(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_db: Database
) -> None:
    made = await result(gql, tokens.admin, CREATE, input=endpoint_input())
    endpoint_id = made["endpoint"]["id"]
    for token in (tokens.reviewer, tokens.manager, tokens.integration, tokens.approver):
        for query, variables in (
            (CREATE, {"input": endpoint_input()}),
            (LIST, {}),
            (ONE, {"id": endpoint_id}),
            (DISABLE, {"id": endpoint_id}),
            (DELETE, {"id": endpoint_id}),
            (ROTATE, {"id": endpoint_id}),
            (DELIVERIES, {"id": endpoint_id}),
            (REPLAY, {"id": endpoint_id, "webhookId": "evt_x"}),
        ):
            refused = await result(gql, token, query, **variables)
            assert refused["__typename"] == "NotPermitted", (query, refused)
    # An admin of another team: refused for kyc, and kyc's endpoint reads as nonexistent.
    payouts_admin = await token_maker(owner_db)("pat", Role.ADMIN, "payouts")
    refused = await result(gql, payouts_admin, CREATE, input=endpoint_input())
    assert refused["__typename"] == "NotPermitted"
    assert "does not cover queue 'kyc'" in refused["message"]
    assert (await result(gql, payouts_admin, LIST))["endpoints"] == []
    for query in (ONE, DISABLE, DELETE, ROTATE, DELIVERIES):
        hidden = await result(gql, payouts_admin, query, id=endpoint_id)
        assert hidden["__typename"] == "NotFound", (query, hidden)
        missing = await result(gql, payouts_admin, query, id=str(uuid.uuid4()))
        assert hidden["message"].replace(endpoint_id, "X") == missing["message"].replace(
            missing["message"].split()[-1], "X"
        )
    still = await result(gql, tokens.admin, ONE, id=endpoint_id)
    assert still["enabled"] is True


async def test_deliveries_are_listed_and_a_failed_one_replayed(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    db: Database,
    owner_conn: asyncpg.Connection,
) -> None:
    made = await endpoints.create_endpoint(
        db, ADMIN, EndpointInput(url=URL, event_types=["decision.effective"], queues=["kyc"]), None
    )
    assert isinstance(made, endpoints.WithSecret)
    ids = [
        await owner_conn.fetchval(
            "SELECT casework_outbox_emit('decision.effective', $1, NULL, 'kyc', NULL, '{}')", n
        )
        for n in (1, 2, 3)
    ]
    await owner_conn.execute(
        "UPDATE outbox_deliveries SET state = 'failed', attempts = 8, last_status = 400, "
        "last_error = 'webhook answered 400: no' WHERE event_id = $1",
        ids[0],
    )
    listed = await result(gql, tokens.admin, DELIVERIES, id=made.endpoint.id, first=2)
    newest = listed["deliveries"]
    assert [d["itemId"] for d in newest] == ["3", "2"]
    assert all(d["state"] == "PENDING" for d in newest)
    older = await result(
        gql, tokens.admin, DELIVERIES, id=made.endpoint.id, before=newest[-1]["cursor"]
    )
    (failed,) = older["deliveries"]
    assert (failed["state"], failed["attempts"], failed["lastStatus"]) == ("FAILED", 8, 400)
    assert failed["nextAttemptAt"] is None
    only_failed = await result(gql, tokens.admin, DELIVERIES, id=made.endpoint.id, state="FAILED")
    assert only_failed["deliveries"] == [failed]

    replayed = await result(
        gql, tokens.admin, REPLAY, id=made.endpoint.id, webhookId=failed["webhookId"]
    )
    assert replayed["__typename"] == "WebhookDelivery"
    assert replayed["webhookId"] == failed["webhookId"]
    assert (replayed["state"], replayed["attempts"]) == ("PENDING", 8)
    again = await result(
        gql, tokens.admin, REPLAY, id=made.endpoint.id, webhookId=failed["webhookId"]
    )
    assert again["__typename"] == "InvalidInput"
    row = await owner_conn.fetchrow(
        "SELECT state, round_start FROM outbox_deliveries WHERE event_id = $1", ids[0]
    )
    assert (row["state"], row["round_start"]) == ("pending", 8)
    for bad in ({"before": "x"}, {"first": 0}):
        body = await gql(tokens.admin, DELIVERIES, id=made.endpoint.id, **bad)
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_REQUEST"], body


async def test_the_host_allow_list_applies_to_endpoints(db: Database, kyc: str) -> None:
    settings = EndpointInput(url=URL, event_types=["decision.effective"], queues=["kyc"])
    allowed = frozenset({"hooks.internal"})
    refused = await endpoints.create_endpoint(db, ADMIN, settings, None, allowed_hosts=allowed)
    assert isinstance(refused, InvalidInput)
    assert refused.field == "url"
    assert "CASEWORK_EFFECT_ALLOWED_HOSTS" in refused.message
    inside = EndpointInput(
        url="https://hooks.internal/x", event_types=["decision.effective"], queues=["kyc"]
    )
    made = await endpoints.create_endpoint(db, ADMIN, inside, None, allowed_hosts=allowed)
    assert isinstance(made, endpoints.WithSecret)
