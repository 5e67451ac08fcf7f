"""Webhook signatures, for Casework and for the integrators who verify them.

Two schemes. **Standard Webhooks** (the default for every target configured since issue 27):
headers `webhook-id` (the event's id, the same on every retry), `webhook-timestamp` (unix
seconds) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
several space-separated while a rotated secret overlaps its successor. Secrets are written
`whsec_<base64 of the key bytes>`. Any Standard Webhooks verifier (PyPI's and npm's
`standardwebhooks`) checks them.

**The legacy header**, kept for targets configured before it: `Casework-Signature:
t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the secret's UTF-8 bytes,
beside `Idempotency-Key`. `verify_signature` checks it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence

SIGNATURE_HEADER = "Casework-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
WEBHOOK_ID_HEADER = "webhook-id"
WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
WEBHOOK_SIGNATURE_HEADER = "webhook-signature"
DEFAULT_TOLERANCE_SECONDS = 300

SECRET_PREFIX = "whsec_"
# 32 random bytes, as Svix's and the specification's examples use (24 to 64 are common).
SECRET_BYTES = 32
MIN_SECRET_BYTES = 16
MAX_SECRET_BYTES = 64


def new_secret() -> str:
    """A fresh `whsec_` secret."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def is_standard_secret(secret: str) -> bool:
    """True for `whsec_<base64>` holding at least MIN_SECRET_BYTES bytes."""
    if not secret.startswith(SECRET_PREFIX):
        return False
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(key) >= MIN_SECRET_BYTES


def secret_refusal(secret: str | None) -> str | None:
    """Why a secret given for a new or rotated webhook will not do, or None. Secrets stored
    before Standard Webhooks may be any string of 16 characters or more and keep signing;
    a secret given now is in the `whsec_` form every Standard Webhooks verifier takes."""
    if secret and is_standard_secret(secret):
        key = base64.b64decode(secret[len(SECRET_PREFIX) :])
        if len(key) <= MAX_SECRET_BYTES:
            return None
    return (
        f"a webhook secret is written {SECRET_PREFIX}<base64>: '{SECRET_PREFIX}' and the "
        f"standard base64 (with padding) of {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} random "
        f"bytes, e.g. '{SECRET_PREFIX}' + the output of `openssl rand -base64 32`"
    )


def secret_key(secret: str) -> bytes:
    """The HMAC key a secret stands for: the decoded bytes of a `whsec_` secret, and the
    UTF-8 bytes of any other (a secret configured before Standard Webhooks; its receiver
    verifies with `whsec_` + the base64 of those bytes)."""
    if is_standard_secret(secret):
        return base64.b64decode(secret[len(SECRET_PREFIX) :])
    return secret.encode()


def as_standard_secret(secret: str) -> str:
    """The `whsec_` form of any secret: what a receiver's verifier is configured with."""
    if is_standard_secret(secret):
        return secret
    return SECRET_PREFIX + base64.b64encode(secret.encode()).decode()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64>` for one secret."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def standard_headers(
    message_id: str, body: bytes, secrets_in_force: Sequence[str], *, timestamp: int | None = None
) -> dict[str, str]:
    """The three Standard Webhooks headers, signed with every secret in force (newest first:
    during a rotation's overlap a receiver holding either secret verifies)."""
    if not secrets_in_force:
        raise ValueError("a webhook is signed with at least one secret")
    moment = int(time.time()) if timestamp is None else timestamp
    signatures = " ".join(
        standard_signature(secret, message_id, moment, body) for secret in secrets_in_force
    )
    return {
        WEBHOOK_ID_HEADER: message_id,
        WEBHOOK_TIMESTAMP_HEADER: str(moment),
        WEBHOOK_SIGNATURE_HEADER: signatures,
    }


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    """The legacy `Casework-Signature` header value for `body`."""
    moment = int(time.time()) if timestamp is None else timestamp
    return f"t={moment},v1={_digest(secret, moment, body)}"


def verify_signature(
    secret: str,
    header: str,
    body: bytes,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """True if the legacy `header` signs exactly `body` with `secret`, recently enough."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
        given = fields["v1"]
    except (ValueError, KeyError):
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        return False
    return hmac.compare_digest(given, _digest(secret, timestamp, body))
