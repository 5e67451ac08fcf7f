"""The webhook effect: a signed POST, classified into applied, transient or permanent."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx

from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.review.apply import DueApplication
from server.domain.review.evidence import canonical_json
from server.domain.text import RECEIVER_TEXT_LIMIT
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.signatures import SIGNATURE_HEADER, sign


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


REDRIVE_HEADER = "Casework-Redrive-Key"


async def post_webhook(client: httpx.AsyncClient, due: DueApplication) -> str:
    assert due.effect_target is not None
    assert due.effect_secret is not None
    extra: dict[str, str] = {}
    if due.redrive_key is not None:
        # The same decision again, on purpose: a receiver that replays its stored answer per
        # Idempotency-Key can tell a redrive (after a fix) from a retry.
        extra[REDRIVE_HEADER] = due.redrive_key
    return await post_signed(
        client,
        target=due.effect_target,
        secret=due.effect_secret,
        payload=due.payload(),
        idempotency_key=str(due.decision_id),
        timeout_seconds=due.effect_timeout_seconds,
        extra_headers=extra,
    )


async def post_redrive(client: httpx.AsyncClient, due: DueDelivery) -> str:
    return await post_signed(
        client,
        target=due.target,
        secret=due.secret,
        payload=due.payload(),
        idempotency_key=due.key,
        timeout_seconds=due.timeout_seconds,
        extra_headers={REDRIVE_HEADER: due.key},
    )


async def post_signed(
    client: httpx.AsyncClient,
    *,
    target: str,
    secret: str,
    payload: dict[str, Any],
    idempotency_key: str,
    timeout_seconds: float,
    extra_headers: dict[str, str],
) -> str:
    """One signed POST: returns a note on 2xx, raises Transient- or PermanentEffectError."""
    body = canonical_json(payload)
    headers = {
        "Content-Type": "application/json",
        "Idempotency-Key": idempotency_key,
        SIGNATURE_HEADER: sign(secret, body),
        **extra_headers,
    }
    try:
        response = await client.post(target, content=body, headers=headers, timeout=timeout_seconds)
    except httpx.TimeoutException as error:
        raise TransientEffectError(f"timed out after {timeout_seconds:g} s") from error
    except httpx.TransportError as error:
        raise TransientEffectError(f"{type(error).__name__}: {error}") from error
    status = response.status_code
    if 200 <= status < 300:
        return f"webhook answered {status}"
    # Stored cut to size (text.storable), and shown only to admins and integrations.
    summary = f"webhook answered {status}: {response.text[:RECEIVER_TEXT_LIMIT]}"
    if status == 429 or status >= 500:
        raise TransientEffectError(
            summary, retry_after=retry_after_seconds(response.headers.get("Retry-After"))
        )
    raise PermanentEffectError(summary)
