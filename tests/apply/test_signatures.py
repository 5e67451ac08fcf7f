"""Webhook signatures: what `server.signatures` gives integrators, and what the real webhook
sends over HTTP verifying with the shared secret and nothing else."""

from __future__ import annotations

import time

import httpx

from server.domain.review.apply import claim_due
from server.domain.review.evidence import canonical_json
from server.effects.webhook import post_webhook
from server.signatures import (
    DEFAULT_TOLERANCE_SECONDS,
    SIGNATURE_HEADER,
    sign,
    verify_signature,
)
from server.store.database import Database
from tests.apply.helpers import SECRET, effect_receiver, make_decision
from tests.integration.helpers import CLAIMER

BODY = b'{"decisionId":"7","verdict":"APPROVE"}'


def test_a_signature_verifies_with_its_secret_over_its_body() -> None:
    header = sign(SECRET, BODY)

    assert verify_signature(SECRET, header, BODY)
    fields = dict(part.split("=", 1) for part in header.split(","))
    assert set(fields) == {"t", "v1"}
    assert abs(int(fields["t"]) - time.time()) <= 2


def test_a_tampered_body_fails() -> None:
    header = sign(SECRET, BODY)

    assert not verify_signature(SECRET, header, BODY.replace(b"APPROVE", b"REJECT"))
    assert not verify_signature(SECRET, header, BODY + b" ")


def test_a_wrong_secret_fails() -> None:
    assert not verify_signature("another-secret-of-16+", sign(SECRET, BODY), BODY)


def test_an_old_timestamp_fails_and_a_recent_one_passes() -> None:
    now = time.time()
    old = sign(SECRET, BODY, timestamp=int(now) - DEFAULT_TOLERANCE_SECONDS - 5)
    recent = sign(SECRET, BODY, timestamp=int(now) - DEFAULT_TOLERANCE_SECONDS + 5)

    assert not verify_signature(SECRET, old, BODY, now=now)
    assert verify_signature(SECRET, recent, BODY, now=now)
    # A captured request replayed later: the same header, once the tolerance has passed.
    assert not verify_signature(
        SECRET, sign(SECRET, BODY), BODY, now=now + DEFAULT_TOLERANCE_SECONDS + 5
    )


def test_a_timestamp_changed_to_look_recent_fails() -> None:
    header = sign(SECRET, BODY, timestamp=int(time.time()) - 3600)
    digest = header.split(",", 1)[1]

    assert not verify_signature(SECRET, f"t={int(time.time())},{digest}", BODY)


def test_malformed_headers_fail() -> None:
    for header in ("", "t=1", "v1=abc", "t=x,v1=abc", "garbage", sign(SECRET, BODY)[:-1]):
        assert not verify_signature(SECRET, header, BODY), header


async def test_the_webhooks_header_verifies_at_the_receiver_with_the_shared_secret(
    db: Database, kyc_queue: str
) -> None:
    async with effect_receiver(db, kyc_queue) as receiver:
        decision_id = await make_decision(db, kyc_queue, "signed")
        (due,) = await claim_due(db, 1, CLAIMER)
        async with httpx.AsyncClient() as client:
            note = await post_webhook(client, due)

    assert note == "webhook answered 200"
    (request,) = receiver.requests
    assert request.signature_ok
    assert (request.method, request.path) == ("POST", "/casework/decisions")
    assert request.key == str(decision_id)
    assert request.headers["content-type"] == "application/json"
    assert request.body == canonical_json(due.payload())
    assert request.json()["decisionId"] == str(decision_id)
    header = request.headers[SIGNATURE_HEADER.lower()]
    assert verify_signature(SECRET, header, request.body)
    tampered = request.body.replace(b'"APPROVE"', b'"REJECT"')
    assert tampered != request.body
    assert not verify_signature(SECRET, header, tampered)
    assert not verify_signature("not-the-queue-secret", header, request.body)
    later = time.time() + DEFAULT_TOLERANCE_SECONDS + 5
    assert not verify_signature(SECRET, header, request.body, now=later)
