"""verify_webhook: a Casework webhook's signature, checked before anything is trusted.

Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) through PyPI's
`standardwebhooks`, the reference verifier; and, for a receiver configured before Casework
signed that way, the legacy `Casework-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<body>">` keyed with the secret's text.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from standardwebhooks.webhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as _StandardError

from casework_client.errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"
LEGACY_HEADER = "casework-signature"
TOLERANCE_SECONDS = 300


def verify_webhook(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str | Iterable[str],
    *,
    allow_legacy: bool = True,
    tolerance_seconds: int = TOLERANCE_SECONDS,
) -> Any:
    """The webhook's JSON body, once its signature checks out; else WebhookVerificationError.

    `body` is the raw request body, byte for byte (never re-serialised JSON). `secret` is the
    endpoint's secret, or several (during a rotation, the old and the new: either verifies).
    A `whsec_` secret is used as it is; a secret in another form (a target configured before
    Standard Webhooks) stands for `whsec_` + the base64 of its text. Standard headers are
    checked when present; otherwise, with `allow_legacy`, `Casework-Signature`.
    """
    raw = body.encode() if isinstance(body, str) else body
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("verify_webhook needs at least one secret")
    lowered = {key.lower(): value for key, value in headers.items()}
    if "webhook-signature" in lowered:
        _verify_standard(raw, lowered, secrets, tolerance_seconds)
    elif allow_legacy and LEGACY_HEADER in lowered:
        _verify_legacy(raw, lowered[LEGACY_HEADER], secrets, tolerance_seconds)
    else:
        expected = "webhook-signature" + (" or Casework-Signature" if allow_legacy else "")
        raise WebhookVerificationError(f"no {expected} header")
    try:
        return json.loads(raw)
    except ValueError as error:
        raise WebhookVerificationError("the signed body is not JSON") from error


def _standard_secret(secret: str) -> str:
    if secret.startswith(SECRET_PREFIX):
        return secret
    return SECRET_PREFIX + base64.b64encode(secret.encode()).decode()


def _verify_standard(
    body: bytes, headers: dict[str, str], secrets: list[str], tolerance_seconds: int
) -> None:
    needed = ("webhook-id", "webhook-timestamp", "webhook-signature")
    missing = [name for name in needed if not headers.get(name)]
    if missing:
        raise WebhookVerificationError(f"missing header(s): {', '.join(missing)}")
    try:
        timestamp = int(headers["webhook-timestamp"])
    except ValueError as error:
        raise WebhookVerificationError("webhook-timestamp is not a number") from error
    # standardwebhooks checks a fixed five minutes; a stricter tolerance is checked here.
    if abs(time.time() - timestamp) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    verifiers = []
    for secret in secrets:
        try:
            verifiers.append(Webhook(_standard_secret(secret)))
        except (RuntimeError, ValueError) as error:  # binascii.Error is a ValueError
            raise ValueError("a whsec_ secret holds base64 after its prefix") from error
    for verifier in verifiers:
        try:
            verifier.verify(body, headers)
        except _StandardError:
            continue
        return
    raise WebhookVerificationError("no webhook-signature matches the secret(s)")


def _verify_legacy(body: bytes, header: str, secrets: list[str], tolerance_seconds: int) -> None:
    try:
        fields = dict(part.strip().split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
        given = fields["v1"]
    except (ValueError, KeyError) as error:
        raise WebhookVerificationError("Casework-Signature is malformed") from error
    if abs(time.time() - timestamp) > tolerance_seconds:
        raise WebhookVerificationError("Casework-Signature's timestamp is outside the tolerance")
    signed = str(timestamp).encode() + b"." + body
    for secret in secrets:
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if hmac.compare_digest(given, expected):
            return
    raise WebhookVerificationError("Casework-Signature does not match the secret(s)")
