"""Webhook signatures, for Casework and for the integrators who verify them.

Header `Casework-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with
the queue's effect secret. Integrators verify with `verify_signature`; its timestamp check
stops a captured request from being replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Casework-Signature"
DEFAULT_TOLERANCE_SECONDS = 300


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    """The header value for `body`."""
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
    """True if `header` signs exactly `body` with `secret`, recently enough."""
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
