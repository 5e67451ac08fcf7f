"""Standard Webhooks on a queue's decision effect: the per-queue legacy headers, secret
rotation with an overlap (both secrets verify during it, only the new one after), and a
410 from the receiver. Every request is verified by PyPI's standardwebhooks (the receiver
does it for each one; these tests also hold verifiers of their own)."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from server.domain.review.apply import claim_due
from server.effects.http import open_session
from server.effects.webhook import post_webhook
from server.signatures import as_standard_secret, new_secret, verify_signature
from server.store.database import Database
from server.worker import ApplyWorker
from tests.api.conftest import GraphQL, Tokens
from tests.apply.helpers import (
    FAST,
    SECRET,
    attempt_rows,
    configure_effect,
    make_decision,
    reaches,
    running,
    webhook,
)
from tests.apply.receiver import Receiver, Reply, Request, always, webhook_receiver
from tests.integration.helpers import CLAIMER

CONFIGURE = """
mutation($input: ConfigureQueueInput!) {
  result: configureQueue(input: $input) {
    __typename
    ... on QueueConfigured {
      queue { name effectKind effectLegacyHeaders effectSecretOverlapEndsAt }
    }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""

ROTATE = """
mutation($queue: String!, $secret: String, $overlapHours: Int) {
  result: rotateEffectSecret(queue: $queue, secret: $secret, overlapHours: $overlapHours) {
    __typename
    ... on EffectSecretRotated {
      generatedSecret overlapEndsAt
      queue { name effectLegacyHeaders effectSecretOverlapEndsAt }
    }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""

ROTATE_DEFAULT_OVERLAP = """
mutation($queue: String!) {
  result: rotateEffectSecret(queue: $queue) {
    __typename
    ... on EffectSecretRotated { generatedSecret overlapEndsAt }
  }
}
"""

# The secret a queue's receiver was given before Standard Webhooks: any string of 16+.
PLAIN_SECRET = "erp-plain-secret-from-2025"
NEXT_SECRET = new_secret()


async def result_of(gql: GraphQL, token: str, query: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["result"]
    return result


async def one_delivery(db: Database, queue: str, key: str) -> None:
    """A decision in `queue`, claimed and POSTed once by the real effect."""
    await make_decision(db, queue, key)
    (due,) = await claim_due(db, 1, CLAIMER)
    async with open_session(4) as client:
        assert await post_webhook(client, due) == "webhook answered 200"


def accepts(secret: str, request: Request) -> bool:
    try:
        Webhook(as_standard_secret(secret)).verify(request.body, request.headers)
    except WebhookVerificationError:
        return False
    return True


async def legacy_queue(conn: asyncpg.Connection, queue: str, receiver: Receiver) -> None:
    """The queue as migration 0032 leaves one configured before it: a plain secret, and the
    legacy headers on."""
    await conn.execute(
        "UPDATE queues SET effect_kind = 'webhook', effect_target = $2, effect_secret = $3, "
        "effect_legacy_headers = true WHERE name = $1",
        queue,
        receiver.url,
        PLAIN_SECRET,
    )


async def end_overlap(conn: asyncpg.Connection) -> None:
    """The overlap ends: the clock of the rotated-out secrets moves past their expiry."""
    await conn.execute(
        "UPDATE retiring_webhook_secrets SET retired_at = now() - interval '25 hours', "
        "expires_at = now() - interval '1 second'"
    )


# --- the legacy headers -----------------------------------------------------------------------


async def test_a_queue_configured_before_keeps_the_legacy_headers_beside_the_standard_ones(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(PLAIN_SECRET) as receiver:
        await legacy_queue(owner_conn, kyc_queue, receiver)
        await one_delivery(db, kyc_queue, "legacy")

    (request,) = receiver.requests
    assert request.signature_ok
    assert request.legacy
    # The old receiver's check, unchanged: Casework-Signature with the plain secret.
    assert verify_signature(PLAIN_SECRET, request.headers["casework-signature"], request.body)
    assert request.headers["idempotency-key"] == request.headers["webhook-id"]
    assert request.headers["webhook-id"] == request.json()["decisionId"]
    # The new check: the same plain secret in its whsec_ form.
    assert accepts(PLAIN_SECRET, request)
    assert not accepts("another-plain-secret-0000", request)


async def test_an_admin_turns_the_legacy_headers_on_and_off(
    db: Database, kyc_queue: str, gql: GraphQL, tokens: Tokens
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        effect = {"kind": "WEBHOOK", "target": receiver.url, "secret": SECRET}
        configured = await result_of(
            gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "effect": effect}
        )
        assert configured["queue"]["effectLegacyHeaders"] is False
        await one_delivery(db, kyc_queue, "standard")

        on = await result_of(
            gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "effectLegacyHeaders": True}
        )
        assert on["queue"]["effectLegacyHeaders"] is True
        await one_delivery(db, kyc_queue, "both")

        # A new target given without the setting keeps it.
        kept = await result_of(
            gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "effect": effect}
        )
        assert kept["queue"]["effectLegacyHeaders"] is True

        off = await result_of(
            gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "effectLegacyHeaders": False}
        )
        assert off["queue"]["effectLegacyHeaders"] is False
        await one_delivery(db, kyc_queue, "standard-again")

    assert [r.legacy for r in receiver.requests] == [False, True, False]
    assert all(r.signature_ok for r in receiver.requests)
    assert all(accepts(SECRET, r) for r in receiver.requests)


async def test_the_legacy_headers_need_a_webhook_and_a_new_secret_the_whsec_form(
    kyc_queue: str, gql: GraphQL, tokens: Tokens
) -> None:
    handler = {"kind": "HANDLER", "target": "credit_limits"}
    refused = await result_of(
        gql,
        tokens.admin,
        CONFIGURE,
        input={"name": kyc_queue, "effect": handler, "effectLegacyHeaders": True},
    )
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "effectLegacyHeaders")

    plain = {"kind": "WEBHOOK", "target": "https://erp.example/hooks", "secret": PLAIN_SECRET}
    refused = await result_of(
        gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "effect": plain}
    )
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "effect.secret")
    assert "whsec_<base64>" in refused["message"]


# --- rotation ---------------------------------------------------------------------------------


async def test_during_the_overlap_both_secrets_verify_and_after_it_only_the_new_one(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, gql: GraphQL, tokens: Tokens
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        await configure_effect(db, kyc_queue, webhook(receiver.url))
        await one_delivery(db, kyc_queue, "before")

        rotated = await result_of(
            gql, tokens.admin, ROTATE, queue=kyc_queue, secret=NEXT_SECRET, overlapHours=24
        )
        assert rotated["__typename"] == "EffectSecretRotated", rotated
        assert rotated["generatedSecret"] is None
        assert rotated["overlapEndsAt"] is not None
        assert rotated["queue"]["effectSecretOverlapEndsAt"] == rotated["overlapEndsAt"]
        await one_delivery(db, kyc_queue, "during")

        await end_overlap(owner_conn)
        await one_delivery(db, kyc_queue, "after")
        configured = await result_of(
            gql, tokens.admin, CONFIGURE, input={"name": kyc_queue, "leaseTtlSeconds": 300}
        )
        assert configured["queue"]["effectSecretOverlapEndsAt"] is None

    before, during, after = receiver.requests
    assert [len(r.headers["webhook-signature"].split(" ")) for r in receiver.requests] == [1, 2, 1]
    assert (accepts(SECRET, before), accepts(NEXT_SECRET, before)) == (True, False)
    assert (accepts(SECRET, during), accepts(NEXT_SECRET, during)) == (True, True)
    assert (accepts(SECRET, after), accepts(NEXT_SECRET, after)) == (False, True)
    assert not any(r.legacy for r in receiver.requests)


async def test_a_legacy_header_keeps_the_old_secret_until_the_overlap_ends(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, gql: GraphQL, tokens: Tokens
) -> None:
    """Casework-Signature holds one signature: the secret the receiver had before the
    rotation makes it until the overlap ends, then the new one."""
    async with webhook_receiver(PLAIN_SECRET) as receiver:
        await legacy_queue(owner_conn, kyc_queue, receiver)
        rotated = await result_of(gql, tokens.admin, ROTATE, queue=kyc_queue, secret=NEXT_SECRET)
        assert rotated["__typename"] == "EffectSecretRotated", rotated
        assert rotated["queue"]["effectLegacyHeaders"] is True
        await one_delivery(db, kyc_queue, "during")
        await end_overlap(owner_conn)
        await one_delivery(db, kyc_queue, "after")

    during, after = receiver.requests
    assert accepts(PLAIN_SECRET, during)
    assert accepts(NEXT_SECRET, during)
    assert verify_signature(PLAIN_SECRET, during.headers["casework-signature"], during.body)
    assert accepts(NEXT_SECRET, after)
    assert not accepts(PLAIN_SECRET, after)
    assert verify_signature(NEXT_SECRET, after.headers["casework-signature"], after.body)
    assert not verify_signature(PLAIN_SECRET, after.headers["casework-signature"], after.body)


async def test_a_generated_secret_is_shown_once_and_signs_and_overlap_0_stops_the_old_one(
    db: Database, kyc_queue: str, gql: GraphQL, tokens: Tokens
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        await configure_effect(db, kyc_queue, webhook(receiver.url))
        rotated = await result_of(
            gql, tokens.admin, ROTATE, queue=kyc_queue, secret=None, overlapHours=0
        )
        assert rotated["__typename"] == "EffectSecretRotated", rotated
        generated = rotated["generatedSecret"]
        assert generated.startswith("whsec_")
        assert generated != SECRET
        assert rotated["overlapEndsAt"] is None
        await one_delivery(db, kyc_queue, "generated")

    (request,) = receiver.requests
    assert accepts(generated, request)
    assert not accepts(SECRET, request)


async def test_the_default_overlap_is_24_hours(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, gql: GraphQL, tokens: Tokens
) -> None:
    await configure_effect(db, kyc_queue, webhook("https://erp.example/hooks"))

    rotated = await result_of(gql, tokens.admin, ROTATE_DEFAULT_OVERLAP, queue=kyc_queue)

    assert rotated["__typename"] == "EffectSecretRotated", rotated
    overlap = await owner_conn.fetchval(
        "SELECT expires_at - retired_at FROM retiring_webhook_secrets WHERE queue = $1", kyc_queue
    )
    assert overlap.total_seconds() == 24 * 3600


async def test_a_new_effect_ends_an_overlap_at_once(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, gql: GraphQL, tokens: Tokens
) -> None:
    await configure_effect(db, kyc_queue, webhook("https://erp.example/hooks"))
    await result_of(gql, tokens.admin, ROTATE, queue=kyc_queue, secret=NEXT_SECRET)
    assert await owner_conn.fetchval("SELECT count(*) FROM retiring_webhook_secrets") == 1

    await configure_effect(db, kyc_queue, webhook("https://erp.example/new-hooks", NEXT_SECRET))

    assert await owner_conn.fetchval("SELECT count(*) FROM retiring_webhook_secrets") == 0


@pytest.mark.parametrize(
    ("token", "variables", "expected"),
    [
        ("reviewer", {"secret": NEXT_SECRET}, ("NotPermitted", None)),
        ("admin", {"secret": PLAIN_SECRET}, ("InvalidInput", "secret")),
        ("admin", {"secret": NEXT_SECRET, "overlapHours": 721}, ("InvalidInput", "overlapHours")),
        ("admin", {"secret": NEXT_SECRET, "overlapHours": -1}, ("InvalidInput", "overlapHours")),
    ],
    ids=["not-an-admin", "plain-secret", "overlap-too-long", "overlap-negative"],
)
async def test_a_refused_rotation_changes_nothing(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    tokens: Tokens,
    token: str,
    variables: dict[str, Any],
    expected: tuple[str, str | None],
) -> None:
    await configure_effect(db, kyc_queue, webhook("https://erp.example/hooks"))
    secret_of = "SELECT effect_secret FROM queues WHERE name = $1"
    before = await owner_conn.fetchval(secret_of, kyc_queue)

    refused = await result_of(gql, getattr(tokens, token), ROTATE, queue=kyc_queue, **variables)

    assert (refused["__typename"], refused.get("field")) == expected, refused
    after = await owner_conn.fetchval(secret_of, kyc_queue)
    assert after == before == SECRET
    assert await owner_conn.fetchval("SELECT count(*) FROM retiring_webhook_secrets") == 0


async def test_a_queue_without_a_webhook_has_no_secret_to_rotate(
    kyc_queue: str, gql: GraphQL, tokens: Tokens
) -> None:
    refused = await result_of(gql, tokens.admin, ROTATE, queue=kyc_queue, secret=NEXT_SECRET)

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "queue")


# --- 410 Gone ---------------------------------------------------------------------------------


async def test_a_410_fails_the_decision_at_once_to_a_person_never_dropped(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """A receiver that answers 410 asks never to be sent to again. The decision must still be
    carried out: it fails at once (no retry would help) and becomes an exception a person
    owns, in apply_decision, saying what happened; the queue's effect stays as it is."""
    gone = Reply(410, body=b'{"error":"this endpoint was retired"}')
    async with webhook_receiver(SECRET, always(gone)) as receiver:
        await configure_effect(db, kyc_queue, webhook(receiver.url), max_attempts=8)
        decision_id = await make_decision(db, kyc_queue, "gone")
        async with running(ApplyWorker(db, FAST, name="gone-worker")):
            await reaches(owner_conn, decision_id, "failed", within=15, what="the 410 failed it")

    (request,) = receiver.requests
    assert request.signature_ok
    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert attempt["outcome"] == "permanent"
    assert attempt["error"].startswith("webhook answered 410")
    assert "410 Gone" in attempt["error"]
    exception = await owner_conn.fetchrow(
        "SELECT reason_code, detail, state FROM exceptions "
        "WHERE workflow = 'apply_decision' AND source_record_id = $1",
        str(decision_id),
    )
    assert exception is not None
    assert exception["reason_code"] == "effect_refused"
    assert "410 Gone" in exception["detail"]
    kind = await owner_conn.fetchval("SELECT effect_kind FROM queues WHERE name = $1", kyc_queue)
    assert kind == "webhook"
