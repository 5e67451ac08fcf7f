"""The webhook effect: a signed POST, classified into applied, transient or permanent."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any

from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.review.apply import DueApplication
from server.domain.review.evidence import canonical_json
from server.domain.text import RECEIVER_TEXT_LIMIT
from server.effects.errors import GoneEffectError, PermanentEffectError, TransientEffectError
from server.effects.http import TRANSPORT_ERRORS, Session, failure, post
from server.signatures import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, sign, standard_headers


@dataclass(frozen=True)
class Signing:
    """How one delivery is signed. `message_id` is the `webhook-id` (and, for a legacy
    target, the `Idempotency-Key`): the same on every retry of the same event. `secrets`
    are the ones in force, newest first (more than one during a rotation's overlap)."""

    message_id: str
    secrets: tuple[str, ...]
    # A target configured before Standard Webhooks also gets Casework-Signature and
    # Idempotency-Key, so that its receiver keeps working. That header holds one signature:
    # the oldest secret in force makes it, so a rotation does not break a receiver still on
    # the old header before its overlap ends (then the new secret takes over).
    legacy: bool = False

    def headers(self, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
        headers = standard_headers(self.message_id, body, self.secrets, timestamp=timestamp)
        if self.legacy:
            moment = int(headers["webhook-timestamp"])
            headers[IDEMPOTENCY_HEADER] = self.message_id
            headers[SIGNATURE_HEADER] = sign(self.secrets[-1], body, timestamp=moment)
        return headers


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


def decision_signing(due: DueApplication) -> Signing:
    """webhook-id (and Idempotency-Key): the decision id, the same on every attempt and on a
    redrive of the decision (Casework-Redrive-Key tells a redrive apart)."""
    return Signing(str(due.decision_id), due.effect_secrets, legacy=due.effect_legacy_headers)


def redrive_signing(due: DueDelivery) -> Signing:
    """webhook-id (and Idempotency-Key): the redrive key, one per correction version."""
    return Signing(due.key, due.secrets, legacy=due.legacy_headers)


async def post_webhook(client: Session, due: DueApplication) -> str:
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
        payload=due.payload(),
        signing=decision_signing(due),
        timeout_seconds=due.effect_timeout_seconds,
        extra_headers=extra,
    )


async def post_redrive(client: Session, due: DueDelivery) -> str:
    return await post_signed(
        client,
        target=due.target,
        payload=due.payload(),
        signing=redrive_signing(due),
        timeout_seconds=due.timeout_seconds,
        extra_headers={REDRIVE_HEADER: due.key},
    )


@dataclass(frozen=True)
class Answer:
    """What one signed POST came to: a status (None when no response came) and, for a
    failure, what to record and whether to try again."""

    status: int | None
    error: str | None = None
    retry_after: float | None = None
    permanent: bool = False

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def gone(self) -> bool:
        return self.status == 410


async def send_signed(
    client: Session,
    *,
    target: str,
    payload: dict[str, Any],
    signing: Signing,
    timeout_seconds: float,
    extra_headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> Answer:
    """One signed POST of `payload` as canonical JSON, classified: 2xx delivered; 429, 5xx,
    a timeout or a dropped connection worth another try (honouring Retry-After); any other
    4xx permanent (410 among them, which `gone` tells apart)."""
    body = canonical_json(payload)
    headers = {"Content-Type": content_type, **signing.headers(body), **(extra_headers or {})}
    try:
        response = await post(
            client, target, body=body, headers=headers, timeout_seconds=timeout_seconds
        )
    except TimeoutError:
        return Answer(None, f"timed out after {timeout_seconds:g} s")
    except TRANSPORT_ERRORS as error:
        return Answer(None, failure(error))
    status = response.status
    if response.success:
        return Answer(status)
    # Stored cut to size (text.storable), and shown only to admins and integrations.
    summary = f"webhook answered {status}: {response.text[:RECEIVER_TEXT_LIMIT]}"
    if status == 429 or status >= 500:
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        return Answer(status, summary, retry_after=retry_after)
    return Answer(status, summary, permanent=True)


async def post_signed(
    client: Session,
    *,
    target: str,
    payload: dict[str, Any],
    signing: Signing,
    timeout_seconds: float,
    extra_headers: dict[str, str],
    content_type: str = "application/json",
) -> str:
    """One signed POST: returns a note on 2xx, raises Transient- or PermanentEffectError
    (GoneEffectError for 410: the receiver asks never to be sent to again)."""
    answer = await send_signed(
        client,
        target=target,
        payload=payload,
        signing=signing,
        timeout_seconds=timeout_seconds,
        extra_headers=extra_headers,
        content_type=content_type,
    )
    if answer.delivered:
        return f"webhook answered {answer.status}"
    summary = answer.error or f"webhook answered {answer.status}"
    if answer.gone:
        # Never retried, and a decision or redrive is never dropped: it fails to a person
        # (an exception to own, or a failed redrive), who points the target at the
        # receiver's new URL and redrives.
        raise GoneEffectError(
            f"{summary} (410 Gone: the receiver asks not to be sent to again; change the "
            "target, then redrive)"
        )
    if answer.permanent:
        raise PermanentEffectError(summary)
    raise TransientEffectError(summary, retry_after=answer.retry_after)
