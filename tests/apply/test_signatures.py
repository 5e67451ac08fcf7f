"""Webhook signatures: what `server.signatures` gives integrators (the legacy header, the
secret forms), and what the real webhook sends over HTTP verifying with the shared secret
and nothing else, by PyPI's standardwebhooks."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from server.domain.review.apply import claim_due
from server.domain.review.evidence import canonical_json
from server.effects.http import open_session
from server.effects.webhook import post_webhook
from server.signatures import (
    DEFAULT_TOLERANCE_SECONDS,
    as_standard_secret,
    new_secret,
    secret_refusal,
    sign,
    standard_headers,
    standard_signature,
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


async def test_the_webhook_verifies_at_the_receiver_with_the_shared_secret(
    db: Database, kyc_queue: str
) -> None:
    """A webhook configured now: the Standard Webhooks headers only, verified by PyPI's
    standardwebhooks with the queue's secret and by no other, within its tolerance."""
    async with effect_receiver(db, kyc_queue) as receiver:
        decision_id = await make_decision(db, kyc_queue, "signed")
        (due,) = await claim_due(db, 1, CLAIMER)
        async with open_session(4) as client:
            note = await post_webhook(client, due)

    assert note == "webhook answered 200"
    (request,) = receiver.requests
    assert request.signature_ok
    assert not request.legacy
    assert "idempotency-key" not in request.headers
    assert (request.method, request.path) == ("POST", "/casework/decisions")
    assert request.key == request.headers["webhook-id"] == str(decision_id)
    assert request.headers["content-type"] == "application/json"
    assert request.body == canonical_json(due.payload())
    assert request.json()["decisionId"] == str(decision_id)
    assert abs(int(request.headers["webhook-timestamp"]) - time.time()) <= 5
    assert Webhook(SECRET).verify(request.body, request.headers) == request.json()
    tampered = request.body.replace(b'"APPROVE"', b'"REJECT"')
    assert tampered != request.body
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(tampered, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(as_standard_secret("not-the-queue-secret")).verify(request.body, request.headers)
    stale = {
        **request.headers,
        "webhook-timestamp": str(int(request.headers["webhook-timestamp"]) - 3600),
    }
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(request.body, stale)


def test_a_plain_secret_verifies_in_its_whsec_form_over_the_standard_headers() -> None:
    """A target configured before Standard Webhooks keeps its plain secret: its HMAC key is
    the secret's UTF-8 bytes, which a verifier takes as `whsec_` + their base64."""
    plain = "casework-test-signing-secret"
    headers = standard_headers("42", BODY, (plain,))

    assert as_standard_secret(plain) == SECRET
    assert Webhook(as_standard_secret(plain)).verify(BODY, headers, json_parse=False) is None
    assert (
        standard_signature(plain, "42", int(headers["webhook-timestamp"]), BODY)
        == (headers["webhook-signature"])
    )


@pytest.mark.parametrize(
    ("secret", "refused"),
    [
        (SECRET, False),
        ("whsec_" + base64.b64encode(b"k" * 16).decode(), False),
        ("whsec_" + base64.b64encode(b"k" * 64).decode(), False),
        ("whsec_" + base64.b64encode(b"k" * 15).decode(), True),
        ("whsec_" + base64.b64encode(b"k" * 65).decode(), True),
        ("whsec_not base64!", True),
        ("casework-test-signing-secret", True),
        ("", True),
        (None, True),
    ],
)
def test_a_new_secret_is_in_the_whsec_form(secret: str | None, refused: bool) -> None:
    refusal = secret_refusal(secret)

    assert (refusal is not None) == refused
    assert secret_refusal(new_secret()) is None
    if refusal:
        assert "whsec_<base64>" in refusal
