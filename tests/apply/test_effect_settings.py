"""A queue's effect settings are stored as given: a fractional effect timeout is kept, not
cut to whole seconds (0.5 s had become 0, which the table's check then refused)."""

from __future__ import annotations

import httpx

from server.domain.identity.tokens import create_token
from server.domain.model import EffectKind, Queue, Role
from server.domain.review.apply import claim_due
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.store.database import Database
from tests.api.conftest import in_process_client
from tests.apply.helpers import SECRET, make_decision
from tests.conftest import ADMIN, TestDatabase
from tests.integration.helpers import CLAIMER

URL = "http://127.0.0.1:9/decisions"
CONFIGURE = """
mutation($timeout: Float!) {
  configureQueue(input: {name: "kyc", effectTimeoutSeconds: $timeout,
                         effect: {kind: WEBHOOK, target: "http://127.0.0.1:9/decisions",
                                  secret: "whsec_Y2FzZXdvcmstdGVzdC1zaWduaW5nLXNlY3JldA=="}}) {
    __typename
    ... on QueueConfigured { queue { effectKind effectTimeoutSeconds effectMaxAttempts } }
    ... on Error { message }
  }
}
"""


async def test_a_fractional_timeout_is_kept_and_reaches_the_effect(
    db: Database, kyc_queue: str
) -> None:
    effect = Effect(EffectKind.WEBHOOK, URL, SECRET)
    configured = await configure_queue(
        db, ADMIN, QueueSettings(kyc_queue, effect=effect, effect_timeout_seconds=0.5)
    )
    assert isinstance(configured, Queue), configured
    assert configured.effect_timeout_seconds == 0.5

    # Changing another setting leaves it; changing it again keeps the fraction.
    kept = await configure_queue(db, ADMIN, QueueSettings(kyc_queue, effect_max_attempts=4))
    assert isinstance(kept, Queue), kept
    assert (kept.effect_timeout_seconds, kept.effect_max_attempts) == (0.5, 4)
    changed = await configure_queue(
        db, ADMIN, QueueSettings(kyc_queue, effect_timeout_seconds=2.75)
    )
    assert isinstance(changed, Queue), changed
    assert changed.effect_timeout_seconds == 2.75

    await make_decision(db, kyc_queue, "timed")
    (due,) = await claim_due(db, 1, CLAIMER)
    assert due.effect_timeout_seconds == 2.75


async def test_configure_queue_over_graphql_keeps_a_fractional_timeout(
    test_database: TestDatabase, owner_db: Database, kyc_queue: str
) -> None:
    admin = await create_token(owner_db, user="ada", role=Role.ADMIN, queues=[])
    async with in_process_client(test_database, dev=False) as client:
        response: httpx.Response = await client.post(
            "/graphql",
            json={"query": CONFIGURE, "variables": {"timeout": 2.5}},
            headers={"Authorization": f"Bearer {admin}"},
        )
    assert response.status_code == 200, response.text
    result = response.json()["data"]["configureQueue"]
    assert result["__typename"] == "QueueConfigured", result
    assert result["queue"]["effectKind"] == "WEBHOOK"
    assert result["queue"]["effectTimeoutSeconds"] == 2.5
