"""verify_webhook against what Casework sends (server/signatures.py, the sender's own
functions): Standard Webhooks through PyPI's standardwebhooks, both secrets of a rotation's
overlap, a plain secret of a target configured before, and the legacy header."""

from __future__ import annotations

import json
import time

import pytest
from casework_client import WebhookVerificationError, verify_webhook

from server.signatures import as_standard_secret, new_secret, sign, standard_headers

BODY = json.dumps({"type": "decision.effective", "data": {"decisionId": "42"}}).encode()


def test_a_standard_webhook_verifies_and_its_body_is_returned() -> None:
    secret = new_secret()
    headers = standard_headers("evt_" + "a" * 32, BODY, [secret])
    assert verify_webhook(BODY, headers, secret) == json.loads(BODY)
    # Header names in any case, as a web framework may hand them over.
    upper = {name.upper(): value for name, value in headers.items()}
    assert verify_webhook(BODY.decode(), upper, secret)["type"] == "decision.effective"


def test_during_a_rotation_either_secret_verifies_and_a_third_does_not() -> None:
    old, new = new_secret(), new_secret()
    headers = standard_headers("evt_" + "b" * 32, BODY, [new, old])
    assert " " in headers["webhook-signature"]
    assert verify_webhook(BODY, headers, old)
    assert verify_webhook(BODY, headers, new)
    assert verify_webhook(BODY, headers, [new_secret(), old])
    with pytest.raises(WebhookVerificationError):
        verify_webhook(BODY, headers, new_secret())


@pytest.mark.parametrize(
    "tamper",
    ["body", "id", "timestamp_old", "timestamp_future", "no_signature_header"],
)
def test_a_tampered_or_stale_webhook_is_refused(tamper: str) -> None:
    secret = new_secret()
    moment = int(time.time())
    if tamper == "timestamp_old":
        moment -= 301
    if tamper == "timestamp_future":
        moment += 301
    headers = standard_headers("evt_" + "c" * 32, BODY, [secret], timestamp=moment)
    body = BODY
    if tamper == "body":
        body = BODY.replace(b"42", b"43")
    if tamper == "id":
        headers["webhook-id"] = "evt_" + "d" * 32
    if tamper == "no_signature_header":
        del headers["webhook-signature"]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body, headers, secret)


def test_a_plain_secret_configured_before_standard_webhooks_verifies_in_either_form() -> None:
    plain = "s3cret-from-2025"
    headers = standard_headers("1234", BODY, [plain])
    assert verify_webhook(BODY, headers, plain)
    assert verify_webhook(BODY, headers, as_standard_secret(plain))


def test_the_legacy_header_verifies_unless_refused() -> None:
    plain = "s3cret-from-2025"
    headers = {"Casework-Signature": sign(plain, BODY), "Idempotency-Key": "1234"}
    assert verify_webhook(BODY, headers, plain) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError, match="Casework-Signature"):
        verify_webhook(BODY.replace(b"42", b"43"), headers, plain)
    with pytest.raises(WebhookVerificationError, match="no webhook-signature header"):
        verify_webhook(BODY, headers, plain, allow_legacy=False)
    stale = {"Casework-Signature": sign(plain, BODY, timestamp=int(time.time()) - 301)}
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify_webhook(BODY, stale, plain)


def test_standard_headers_win_over_the_legacy_one() -> None:
    """A legacy target gets both; a forged legacy header beside a valid standard signature
    changes nothing, and a valid legacy one cannot rescue a wrong standard signature."""
    secret = new_secret()
    headers = standard_headers("evt_" + "e" * 32, BODY, [secret])
    headers["Casework-Signature"] = "t=1,v1=00"
    assert verify_webhook(BODY, headers, secret)
    wrong = standard_headers("evt_" + "e" * 32, BODY, [new_secret()])
    wrong["Casework-Signature"] = sign(secret, BODY)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(BODY, wrong, secret)


def test_a_malformed_whsec_secret_is_a_configuration_error() -> None:
    headers = standard_headers("evt_" + "f" * 32, BODY, [new_secret()])
    with pytest.raises(ValueError, match="whsec_"):
        verify_webhook(BODY, headers, "whsec_not base64!")
