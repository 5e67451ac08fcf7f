"""Webhook endpoints: an admin registers a URL, the event types it takes, and the queues (for
review events) or workflows (for exception events) it hears about. Each endpoint signs with
its own `whsec_` secrets (rotated with an overlap).

Who may: an admin, and only for queues and workflows the token may change: every queue
named must be one the token covers, and every workflow one whose queues it all covers (as
for configuring the workflow). An endpoint outside that scope reads as nonexistent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.integrations.envelope import EndpointFormat
from server.domain.integrations.events import REVIEW_EVENTS, EventType
from server.domain.integrations.scopes import parse_uuid, scope_refusal, visible
from server.domain.model import Principal
from server.domain.review.queues import admin_refusal, target_refusal
from server.domain.review.webhook_secrets import DEFAULT_OVERLAP_HOURS, checked_rotation
from server.domain.text import check_text
from server.signatures import new_secret, secret_refusal
from server.store import sql
from server.store.database import Database, Row

MAX_DESCRIPTION = 500
# Attempts before a delivery fails for good (replayable), and how long one POST may take.
DEFAULT_MAX_ATTEMPTS = 8
MAX_ATTEMPTS = 100
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_TIMEOUT_SECONDS = 60.0
__all__ = ["DEFAULT_OVERLAP_HOURS"]  # the rotation's default, for the GraphQL argument


@dataclass(frozen=True)
class SigningSecret:
    """A secret in force, without its value (shown once, when created)."""

    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True)
class WebhookEndpoint:
    id: str
    url: str
    description: str
    event_types: tuple[EventType, ...]
    queues: tuple[str, ...] | None
    workflows: tuple[str, ...] | None
    format: EndpointFormat
    legacy_headers: bool
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    max_attempts: int
    timeout_seconds: float
    created_by: str
    created_at: datetime
    updated_at: datetime
    secrets: tuple[SigningSecret, ...]
    pending_deliveries: int
    failed_deliveries: int

    @classmethod
    def from_row(cls, row: Row) -> WebhookEndpoint:
        return cls(
            id=str(row["id"]),
            url=row["url"],
            description=row["description"],
            event_types=tuple(EventType(name) for name in row["event_types"]),
            queues=None if row["queues"] is None else tuple(row["queues"]),
            workflows=None if row["workflows"] is None else tuple(row["workflows"]),
            format=EndpointFormat(row["format"]),
            legacy_headers=row["legacy_headers"],
            enabled=row["enabled"],
            disabled_reason=row["disabled_reason"],
            disabled_at=row["disabled_at"],
            max_attempts=row["max_attempts"],
            timeout_seconds=row["timeout_seconds"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            secrets=tuple(
                SigningSecret(created, expires)
                for created, expires in zip(
                    row["secret_created_at"], row["secret_expires_at"], strict=True
                )
            ),
            pending_deliveries=row["pending_deliveries"],
            failed_deliveries=row["failed_deliveries"],
        )


@dataclass(frozen=True)
class EndpointInput:
    """What createWebhookEndpoint takes; for an update, None leaves a setting as it is
    (giving `queues` replaces `workflows`, and the other way round)."""

    url: str | None = None
    event_types: Sequence[str] | None = None
    queues: Sequence[str] | None = None
    workflows: Sequence[str] | None = None
    format: EndpointFormat | None = None
    legacy_headers: bool | None = None
    description: str | None = None
    max_attempts: int | None = None
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class WithSecret:
    """An endpoint and a secret just made for it: the one time the secret is shown."""

    endpoint: WebhookEndpoint
    secret: str


def check_secret(secret: str, field: str) -> InvalidInput | None:
    if problem := secret_refusal(secret):
        return InvalidInput(f"{problem}; leave it out to have one made", field)
    return None


def _parse_event_types(names: Sequence[str]) -> tuple[EventType, ...] | InvalidInput:
    if not names:
        return InvalidInput("an endpoint takes at least one event type", "eventTypes")
    known = {member.value for member in EventType}
    for name in names:
        if name not in known:
            return InvalidInput(
                f"unknown event type {name[:100]!r}; known: {', '.join(sorted(known))}",
                "eventTypes",
            )
    return tuple(dict.fromkeys(EventType(name) for name in names))


async def _check(
    db: Database,
    principal: Principal,
    settings: EndpointInput,
    allowed_hosts: frozenset[str],
) -> tuple[EventType, ...] | NotPermitted | InvalidInput:
    """The whole of an endpoint's settings (url, event types, scope), merged already."""
    assert settings.url is not None
    assert settings.event_types is not None
    if refusal := target_refusal(settings.url, allowed_hosts):
        return InvalidInput(refusal, "url")
    if len(settings.url) > 2000:
        return InvalidInput("a URL is at most 2000 characters", "url")
    if problem := check_text(
        settings.description, "description", required=False, limit=MAX_DESCRIPTION
    ):
        return problem
    if settings.max_attempts is not None and not 1 <= settings.max_attempts <= MAX_ATTEMPTS:
        return InvalidInput(f"maxAttempts is between 1 and {MAX_ATTEMPTS}", "maxAttempts")
    timeout = settings.timeout_seconds
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        return InvalidInput(
            f"timeoutSeconds is over 0 and at most {MAX_TIMEOUT_SECONDS:g}", "timeoutSeconds"
        )
    types = _parse_event_types(settings.event_types)
    if isinstance(types, InvalidInput):
        return types
    if (settings.queues is None) == (settings.workflows is None):
        return InvalidInput("an endpoint names queues or workflows, one of the two", "queues")
    scoped_by_queue = settings.queues is not None
    for event_type in types:
        if (event_type in REVIEW_EVENTS) != scoped_by_queue:
            needs = "queue" if event_type in REVIEW_EVENTS else "workflow"
            return InvalidInput(
                f"{event_type.value} events are scoped by {needs}: an endpoint taking them "
                f"names {needs}s",
                "eventTypes",
            )
    names = list(settings.queues or settings.workflows or ())
    if refused := await scope_refusal(db, principal, names, by_queue=scoped_by_queue):
        return refused
    return types


async def _read(db: Database, ids: list[uuid.UUID] | None) -> list[WebhookEndpoint]:
    rows = await db.fetch(sql.integrations.WEBHOOK_ENDPOINTS_GET, ids=ids)
    return [WebhookEndpoint.from_row(row) for row in rows]


async def get_endpoint(
    db: Database, principal: Principal, endpoint_id: str, *, what: str = "read webhook endpoints"
) -> WebhookEndpoint | NotPermitted | NotFound:
    if refusal := admin_refusal(principal, what):
        return refusal
    parsed = parse_uuid(endpoint_id)
    found = await visible(db, principal, await _read(db, [parsed])) if parsed else []
    return found[0] if found else NotFound("webhook endpoint", endpoint_id)


async def list_endpoints(
    db: Database, principal: Principal
) -> list[WebhookEndpoint] | NotPermitted:
    if refusal := admin_refusal(principal, "read webhook endpoints"):
        return refusal
    return await visible(db, principal, await _read(db, None))


async def create_endpoint(
    db: Database,
    principal: Principal,
    settings: EndpointInput,
    secret: str | None,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> WithSecret | NotPermitted | InvalidInput:
    if refusal := admin_refusal(principal, "register webhook endpoints"):
        return refusal
    if settings.url is None or settings.event_types is None:
        return InvalidInput("an endpoint needs its url and event types", "url")
    if secret is not None and (problem := check_secret(secret, "secret")):
        return problem
    checked = await _check(db, principal, settings, allowed_hosts)
    if isinstance(checked, NotPermitted | InvalidInput):
        return checked
    secret = secret or new_secret()
    endpoint_id = uuid.uuid4()
    await db.fetchrow(
        sql.integrations.WEBHOOK_ENDPOINT_INSERT,
        id=endpoint_id,
        url=settings.url,
        description=settings.description or "",
        event_types=[t.value for t in checked],
        queues=None if settings.queues is None else list(dict.fromkeys(settings.queues)),
        workflows=None if settings.workflows is None else list(dict.fromkeys(settings.workflows)),
        format=(settings.format or EndpointFormat.STANDARD).value,
        legacy_headers=bool(settings.legacy_headers),
        max_attempts=DEFAULT_MAX_ATTEMPTS
        if settings.max_attempts is None
        else settings.max_attempts,
        timeout_seconds=DEFAULT_TIMEOUT_SECONDS
        if settings.timeout_seconds is None
        else settings.timeout_seconds,
        created_by=principal.user,
        secret=secret,
    )
    (endpoint,) = await _read(db, [endpoint_id])
    return WithSecret(endpoint, secret)


async def update_endpoint(
    db: Database,
    principal: Principal,
    endpoint_id: str,
    changes: EndpointInput,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> WebhookEndpoint | NotPermitted | InvalidInput | NotFound:
    """Changes what it is given. Event types and scope decide which events are recorded for
    it, so they apply to events from now on; url, format and legacy headers are read at each
    attempt, so they apply to pending deliveries too."""
    current = await get_endpoint(db, principal, endpoint_id, what="change webhook endpoints")
    if isinstance(current, NotPermitted | NotFound):
        return current
    if changes.queues is not None and changes.workflows is not None:
        return InvalidInput("an endpoint names queues or workflows, one of the two", "queues")
    merged = EndpointInput(
        url=changes.url if changes.url is not None else current.url,
        event_types=changes.event_types
        if changes.event_types is not None
        else [t.value for t in current.event_types],
        queues=changes.queues
        if changes.queues is not None
        else (current.queues if changes.workflows is None else None),
        workflows=changes.workflows
        if changes.workflows is not None
        else (current.workflows if changes.queues is None else None),
        format=changes.format or current.format,
        legacy_headers=current.legacy_headers
        if changes.legacy_headers is None
        else changes.legacy_headers,
        description=current.description if changes.description is None else changes.description,
        max_attempts=current.max_attempts if changes.max_attempts is None else changes.max_attempts,
        timeout_seconds=current.timeout_seconds
        if changes.timeout_seconds is None
        else changes.timeout_seconds,
    )
    checked = await _check(db, principal, merged, allowed_hosts)
    if isinstance(checked, NotPermitted | InvalidInput):
        return checked
    assert merged.format is not None
    await db.fetchrow(
        sql.integrations.WEBHOOK_ENDPOINT_UPDATE,
        id=uuid.UUID(current.id),
        url=merged.url,
        description=merged.description or "",
        event_types=[t.value for t in checked],
        queues=None if merged.queues is None else list(dict.fromkeys(merged.queues)),
        workflows=None if merged.workflows is None else list(dict.fromkeys(merged.workflows)),
        format=merged.format.value,
        legacy_headers=bool(merged.legacy_headers),
        max_attempts=merged.max_attempts,
        timeout_seconds=merged.timeout_seconds,
    )
    return await _reread(db, current)


async def _reread(db: Database, endpoint: WebhookEndpoint) -> WebhookEndpoint | NotFound:
    found = await _read(db, [uuid.UUID(endpoint.id)])
    # Deleted meanwhile by another admin.
    return found[0] if found else NotFound("webhook endpoint", endpoint.id)


async def disable_endpoint(
    db: Database, principal: Principal, endpoint_id: str, reason: str | None
) -> WebhookEndpoint | NotPermitted | InvalidInput | NotFound:
    """Stops deliveries to it; its pending deliveries wait for a re-enable. Events that
    happen while it is disabled are not recorded for it. Disabling a disabled endpoint
    keeps its first reason."""
    if problem := check_text(reason, "reason", required=False, limit=MAX_DESCRIPTION):
        return problem
    current = await get_endpoint(db, principal, endpoint_id, what="disable webhook endpoints")
    if isinstance(current, NotPermitted | NotFound):
        return current
    said = f": {reason}" if reason else ""
    await db.fetchrow(
        sql.integrations.WEBHOOK_ENDPOINT_DISABLE,
        id=uuid.UUID(current.id),
        reason=f"disabled by {principal.user}{said}",
    )
    return await _reread(db, current)


async def enable_endpoint(
    db: Database, principal: Principal, endpoint_id: str
) -> WebhookEndpoint | NotPermitted | NotFound:
    """Its pending deliveries (those a 410 or an admin left waiting) go out again, in
    order, each with a fresh round of attempts."""
    current = await get_endpoint(db, principal, endpoint_id, what="enable webhook endpoints")
    if isinstance(current, NotPermitted | NotFound):
        return current
    await db.fetchrow(sql.integrations.WEBHOOK_ENDPOINT_ENABLE, id=uuid.UUID(current.id))
    return await _reread(db, current)


async def delete_endpoint(
    db: Database, principal: Principal, endpoint_id: str
) -> WebhookEndpoint | NotPermitted | NotFound:
    """Deletes it with its secrets and its deliveries, pending or not. Returns it as it was."""
    current = await get_endpoint(db, principal, endpoint_id, what="delete webhook endpoints")
    if isinstance(current, NotPermitted | NotFound):
        return current
    row = await db.fetchrow(sql.integrations.WEBHOOK_ENDPOINT_DELETE, id=uuid.UUID(current.id))
    return current if row is not None else NotFound("webhook endpoint", endpoint_id)


async def rotate_secret(
    db: Database,
    principal: Principal,
    endpoint_id: str,
    secret: str | None,
    overlap_hours: int = DEFAULT_OVERLAP_HOURS,
) -> WithSecret | NotPermitted | InvalidInput | NotFound:
    """A new secret signs from now on; the ones signing now keep signing beside it for
    `overlap_hours` (0: they stop now), so that a receiver can move to the new one. The
    same checks as a queue's or a workflow's rotation (`checked_rotation`)."""
    rotation = checked_rotation(secret, overlap_hours)
    if isinstance(rotation, InvalidInput):
        return rotation
    current = await get_endpoint(db, principal, endpoint_id, what="rotate webhook secrets")
    if isinstance(current, NotPermitted | NotFound):
        return current
    secret = rotation.secret
    row = await db.fetchrow(
        sql.integrations.WEBHOOK_ENDPOINT_ROTATE_SECRET,
        id=uuid.UUID(current.id),
        secret=secret,
        overlap_seconds=rotation.overlap_seconds,
    )
    if row is None:
        return NotFound("webhook endpoint", endpoint_id)
    endpoint = await _reread(db, current)
    if isinstance(endpoint, NotFound):
        return endpoint
    return WithSecret(endpoint, secret)
