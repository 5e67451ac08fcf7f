"""From an admin's registration to a verified delivery, through a real `casework serve`: an
endpoint registered with createWebhookEndpoint, an item enqueued and decided over HTTP, and
the process's own apply worker delivering `decision.effective` to a receiver that refuses the
first attempt. The retry carries the same webhook-id, both verify with PyPI's
standardwebhooks, and the body is the catalogue's example in form."""

from __future__ import annotations

from typing import Any

import httpx

from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input
from tests.api.live_server import casework_serve
from tests.apply.helpers import worker_env
from tests.apply.receiver import OK, Reply, Request, webhook_receiver
from tests.conftest import TestDatabase, setup_kyc, token_maker
from tests.integrations.catalogue_support import catalogue_examples, held_against

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WITHIN_SECONDS = 30.0
CREATE = """
mutation($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) {
    __typename
    ... on WebhookEndpointWithSecret { endpoint { id enabled } }
    ... on Error { message }
  }
}
"""


async def call(http: httpx.AsyncClient, token: str, query: str, **variables: Any) -> Any:
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    body = response.json()
    assert response.status_code == 200, body
    assert "errors" not in body, body
    return next(iter(body["data"].values()))


async def test_a_served_process_delivers_a_decision_to_its_endpoint(
    test_database: TestDatabase, db: Database, owner_db: Database
) -> None:
    await setup_kyc(db)
    make = token_maker(owner_db)
    admin = await make("ada-admin", Role.ADMIN, "kyc")
    intake = await make("kyc-intake", Role.INTEGRATION, "kyc")
    rita = await make("rita-reviewer", Role.REVIEWER, "kyc")
    answered: list[int] = []

    def refuse_the_first(request: Request) -> Reply:
        reply = Reply(503, body=b"busy") if not answered else OK
        answered.append(reply.status)
        return reply

    async with (
        webhook_receiver(SECRET, refuse_the_first) as receiver,
        casework_serve(worker_env(test_database)) as url,
        httpx.AsyncClient(base_url=url, timeout=WITHIN_SECONDS) as http,
    ):
        created = await call(
            http,
            admin,
            CREATE,
            input={
                "url": receiver.url,
                "eventTypes": ["decision.effective"],
                "queues": ["kyc"],
                "secret": SECRET,
            },
        )
        assert created["__typename"] == "WebhookEndpointWithSecret", created
        enqueued = await call(
            http, intake, ENQUEUE, queue="kyc", items=[{"externalKey": "app-7731", "payload": {}}]
        )
        assert enqueued["__typename"] == "EnqueuedItems", enqueued
        claim = await call(http, rita, CLAIM, queue="kyc")
        assert claim["__typename"] == "Claim", claim
        decided = await call(
            http, rita, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
        )
        assert decided["__typename"] == "DecisionRecorded", decided

        refused = await receiver.next_arrival(WITHIN_SECONDS)
        delivered = await receiver.next_arrival(WITHIN_SECONDS)

    assert answered == [503, 200]
    assert refused.key == delivered.key
    assert delivered.key.startswith("evt_")
    assert refused.signature_ok
    assert delivered.signature_ok
    assert not delivered.legacy
    assert delivered.headers["content-type"] == "application/json"
    body = delivered.json()
    assert body["data"]["decisionId"] == decided["decision"]["id"]
    assert body["data"]["itemId"] == claim["item"]["id"]
    assert held_against(catalogue_examples()["decision.effective"], body) == []
    # Nothing else was sent: one event, delivered once after one refusal.
    assert [r.key for r in receiver.requests] == [delivered.key, delivered.key]
