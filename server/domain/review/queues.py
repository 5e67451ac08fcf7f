"""Queues and their reason-code catalogues. Changing them is the admin's job."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import (
    PRIORITY_LIMIT,
    SECOND_REVIEW_VERDICTS,
    DueByPriority,
    EffectKind,
    Principal,
    Queue,
    ReasonCode,
    Role,
    Verdict,
)
from server.domain.review import due
from server.domain.rows import grouped
from server.domain.step_up import check_step_up
from server.domain.text import check_label
from server.signatures import secret_refusal
from server.store import sql
from server.store.database import Database
from server.store.errors import IntegrityViolation

QUEUE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
REASON_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class QueueSettings:
    name: str
    lease_ttl_seconds: int | None = None
    max_abandons: int | None = None
    escalation_queue: str | None = None
    escalation_priority_boost: int | None = None
    # How decisions are carried out: None leaves it as it is.
    effect: Effect | None = None
    effect_max_attempts: int | None = None
    effect_timeout_seconds: float | None = None
    # A webhook effect also sends Casework-Signature and Idempotency-Key (migration 0032).
    effect_legacy_headers: bool | None = None
    # The hands-on minutes the queue's reviewers have a day, for the capacity measure.
    reviewer_minutes_per_day: float | None = None
    # Claim controls (migration 0014). None leaves a setting as it is; a limit or due time
    # of 0, an empty rule list and an overdue queue of "" clear it.
    max_leases_per_reviewer: int | None = None
    due_seconds: int | None = None
    due_seconds_by_priority: tuple[DueByPriority, ...] | None = None
    hold_pauses_due: bool | None = None
    overdue_queue: str | None = None
    overdue_priority_boost: int | None = None
    # Four-eyes before the effect (migration 0020): None leaves it as it is; no verdicts
    # turn it off.
    second_review: SecondReviewSettings | None = None
    # QA sampling (migration 0021): the share of approve/reject decisions checked after the
    # effect (0 to 1; 0 turns it off) and the queue the copies go to (default `<name>-qa`,
    # created if it does not exist). None leaves a setting as it is.
    qa_sample_rate: float | None = None
    qa_queue: str | None = None
    # Step-up (migration 0023): decisions need a sign-in at most this many seconds old (0
    # clears it), of this acr ("" clears it). None leaves a setting as it is.
    require_auth_within_seconds: int | None = None
    require_acr: str | None = None


@dataclass(frozen=True)
class SecondReviewSettings:
    verdicts: tuple[Verdict, ...]
    min_priority: int | None = None
    # None: `<queue>-second-review`.
    queue: str | None = None


SECOND_REVIEW_SUFFIX = "-second-review"


def second_review_queue_name(settings: QueueSettings) -> str | None:
    """The second-review queue the settings name (its default, if they name none); None
    when they leave second review as it is or turn it off."""
    second = settings.second_review
    if second is None or not second.verdicts:
        return None
    return second.queue or settings.name + SECOND_REVIEW_SUFFIX


# A day's hands-on minutes of a very large team (about 20,000 people at 8 hours).
MAX_REVIEWER_MINUTES_PER_DAY = 10_000_000


@dataclass(frozen=True)
class Effect:
    kind: EffectKind
    # A webhook URL, or the name of a handler in the `casework.effects` entry-point group.
    target: str | None = None
    # The key webhook bodies are signed with: `whsec_<base64>` (Standard Webhooks).
    secret: str | None = None


def _check_settings(settings: QueueSettings, allowed_hosts: frozenset[str]) -> InvalidInput | None:
    if not QUEUE_NAME.fullmatch(settings.name):
        return InvalidInput(
            "a queue name is 1 to 63 characters of a-z, 0-9, '_', '.', '-', "
            "starting with a letter or digit",
            "name",
        )
    ttl = settings.lease_ttl_seconds
    if ttl is not None and not 1 <= ttl <= 86400:
        return InvalidInput("leaseTtlSeconds must be between 1 and 86400", "leaseTtlSeconds")
    if settings.max_abandons is not None and not 1 <= settings.max_abandons <= 100:
        return InvalidInput("maxAbandons must be between 1 and 100", "maxAbandons")
    effect = settings.effect
    if effect is not None and (problem := _check_effect(effect, allowed_hosts)):
        return problem
    if settings.effect_legacy_headers and effect and effect.kind is not EffectKind.WEBHOOK:
        return InvalidInput("only a webhook effect sends headers", "effectLegacyHeaders")
    attempts = settings.effect_max_attempts
    if attempts is not None and not 1 <= attempts <= 100:
        return InvalidInput("effectMaxAttempts must be between 1 and 100", "effectMaxAttempts")
    timeout = settings.effect_timeout_seconds
    if timeout is not None and not 0 < timeout <= 300:
        return InvalidInput(
            "effectTimeoutSeconds must be above 0 and at most 300", "effectTimeoutSeconds"
        )
    minutes = settings.reviewer_minutes_per_day
    if minutes is not None and not 0 <= minutes <= MAX_REVIEWER_MINUTES_PER_DAY:
        return InvalidInput(
            f"reviewerMinutesPerDay must be between 0 and {MAX_REVIEWER_MINUTES_PER_DAY}",
            "reviewerMinutesPerDay",
        )
    boost = settings.escalation_priority_boost
    if boost is not None and not 0 <= boost <= 1_000_000:
        return InvalidInput(
            "escalationPriorityBoost must be between 0 and 1000000", "escalationPriorityBoost"
        )
    return (
        _check_claim_controls(settings)
        or _check_qa(settings)
        or check_step_up(settings.require_auth_within_seconds, settings.require_acr)
    )


MAX_LEASES_PER_REVIEWER = 1000
QA_QUEUE_SUFFIX = "-qa"


def _check_qa(settings: QueueSettings) -> InvalidInput | None:
    rate = settings.qa_sample_rate
    # `not 0 <= rate <= 1` is true for NaN too.
    if rate is not None and not 0 <= rate <= 1:
        return InvalidInput("qaSampleRate must be between 0 and 1 (0: off)", "qaSampleRate")
    qa_queue = settings.qa_queue
    if qa_queue is not None:
        if not QUEUE_NAME.fullmatch(qa_queue):
            return InvalidInput("qaQueue is a queue name", "qaQueue")
        if qa_queue == settings.name:
            return InvalidInput("qaQueue must name another queue", "qaQueue")
    return None


def default_qa_queue(name: str) -> str:
    return name + QA_QUEUE_SUFFIX


def _check_claim_controls(settings: QueueSettings) -> InvalidInput | None:
    limit = settings.max_leases_per_reviewer
    if limit is not None and not 0 <= limit <= MAX_LEASES_PER_REVIEWER:
        return InvalidInput(
            f"maxLeasesPerReviewer must be between 1 and {MAX_LEASES_PER_REVIEWER} (0: no limit)",
            "maxLeasesPerReviewer",
        )
    if problem := due.check_due_seconds(settings.due_seconds, "dueSeconds"):
        return problem
    if problem := due.check_due_rules(settings.due_seconds_by_priority):
        return problem
    overdue_queue = settings.overdue_queue
    if overdue_queue:
        if not QUEUE_NAME.fullmatch(overdue_queue):
            return InvalidInput('overdueQueue is a queue name ("" clears it)', "overdueQueue")
        if overdue_queue == settings.name:
            return InvalidInput("overdueQueue must name another queue", "overdueQueue")
    boost = settings.overdue_priority_boost
    if boost is not None and not 0 <= boost <= 1_000_000:
        return InvalidInput(
            "overduePriorityBoost must be between 0 and 1000000", "overduePriorityBoost"
        )
    return _check_second_review(settings)


def _check_second_review(settings: QueueSettings) -> InvalidInput | None:
    second = settings.second_review
    if second is None:
        return None
    if set(second.verdicts) - SECOND_REVIEW_VERDICTS:
        return InvalidInput(
            "secondReview.verdicts may name APPROVE and REJECT only: an escalation moves the "
            "item and has no effect to hold back",
            "secondReview.verdicts",
        )
    if not second.verdicts:
        # Off: nothing else is read.
        return None
    low = second.min_priority
    if low is not None and not -PRIORITY_LIMIT <= low <= PRIORITY_LIMIT:
        return InvalidInput(
            f"secondReview.minPriority must be between {-PRIORITY_LIMIT} and {PRIORITY_LIMIT}",
            "secondReview.minPriority",
        )
    name = second_review_queue_name(settings)
    assert name is not None
    if not QUEUE_NAME.fullmatch(name):
        return InvalidInput(
            f"the second-review queue would be named {name[:100]!r}, which is not a queue "
            "name: name one in secondReview.queue",
            "secondReview.queue",
        )
    if name == settings.name:
        return InvalidInput("secondReview.queue must name another queue", "secondReview.queue")
    return None


def _check_effect(effect: Effect, allowed_hosts: frozenset[str]) -> InvalidInput | None:
    if effect.kind is EffectKind.NONE:
        if effect.target or effect.secret:
            return InvalidInput("an effect of kind NONE takes no target or secret", "effect")
        return None
    if not effect.target:
        return InvalidInput("a webhook needs a URL; a handler needs its name", "effect.target")
    if effect.kind is EffectKind.WEBHOOK:
        return check_webhook(effect.target, effect.secret, "effect", allowed_hosts)
    return None


def check_webhook(
    target: str | None, secret: str | None, field: str, allowed_hosts: frozenset[str]
) -> InvalidInput | None:
    """A webhook is an http(s) URL, without credentials, to an allowed host, and a signing
    secret in the Standard Webhooks form, `whsec_<base64>`."""
    refusal = target_refusal(target or "", allowed_hosts)
    if refusal:
        return InvalidInput(refusal, f"{field}.target")
    if problem := secret_refusal(secret):
        return InvalidInput(problem, f"{field}.secret")
    return None


def target_refusal(target: str, allowed_hosts: frozenset[str]) -> str | None:
    """Why a webhook target may not be posted to, or None. Checked when it is configured and
    again by the worker before each POST (the allow-list may have changed since): an empty
    allow-list means any host.

    A user or password in the URL is refused: it would be shown to every reader of the
    queue and sent as Basic credentials to whatever host the URL names; the signing secret
    is how a receiver knows the sender."""
    try:
        parts = urlsplit(target)
        host = parts.hostname
    except ValueError:
        return "a webhook target is an http(s) URL"
    if parts.scheme not in ("http", "https") or not host:
        return "a webhook target is an http(s) URL"
    if "@" in parts.netloc:
        return "a webhook target may not carry a user or password; the signature authenticates"
    if allowed_hosts and host.rstrip(".") not in allowed_hosts:
        return (
            f"webhook host {host[:200]!r} is not allowed (CASEWORK_EFFECT_ALLOWED_HOSTS names "
            "the hosts effects and redrives may be sent to)"
        )
    return None


def shown_target(target: str | None) -> str | None:
    """A target as readers see it: a user or password stored before they were refused is
    not shown (the worker refuses to post to such a target, so it must be reconfigured)."""
    if target is None:
        return None
    try:
        parts = urlsplit(target)
    except ValueError:
        return target
    if "@" not in parts.netloc:
        return target
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()


async def configure_queue(
    db: Database,
    principal: Principal,
    settings: QueueSettings,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> Queue | NotPermitted | InvalidInput:
    """allowed_hosts: where webhook effects may point (empty: anywhere)."""
    if refusal := admin_refusal(principal, "configure queues"):
        return refusal
    # The queue and the queues it escalates to are all the admin's to change: an escalation
    # into another team's queue hands that team work, so it must be in the token's scope.
    problem = _check_settings(settings, allowed_hosts)
    review_queue = None if problem else second_review_queue_name(settings)
    for name in (settings.name, settings.escalation_queue, settings.overdue_queue, review_queue):
        if name and not principal.works_in(name):
            return not_covered(name)
    if problem:
        return problem
    if review_queue is not None:
        existing = (await get_queues(db, [review_queue])).get(review_queue)
        if existing is not None and existing.holder_role is not Role.REVIEWER:
            return InvalidInput(
                f"queue {review_queue!r} is worked by {existing.holder_role.value}s; a "
                "second review is made by reviewers",
                "secondReview.queue",
            )
    second = settings.second_review
    qa_queue = await _qa_queue(db, principal, settings)
    if isinstance(qa_queue, InvalidInput | NotPermitted):
        return qa_queue
    try:
        row = await db.fetchrow(
            sql.queues.QUEUE_UPSERT,
            name=settings.name,
            lease_ttl_seconds=settings.lease_ttl_seconds,
            max_abandons=settings.max_abandons,
            escalation_queue=settings.escalation_queue,
            escalation_priority_boost=settings.escalation_priority_boost,
            effect_kind=settings.effect.kind.value if settings.effect else None,
            effect_target=settings.effect.target if settings.effect else None,
            effect_secret=settings.effect.secret if settings.effect else None,
            effect_max_attempts=settings.effect_max_attempts,
            effect_timeout_seconds=settings.effect_timeout_seconds,
            effect_legacy_headers=settings.effect_legacy_headers,
            reviewer_minutes_per_day=settings.reviewer_minutes_per_day,
            max_leases_per_reviewer=settings.max_leases_per_reviewer,
            due_seconds=settings.due_seconds,
            due_seconds_by_priority=None
            if settings.due_seconds_by_priority is None
            else due.stored_rules(settings.due_seconds_by_priority),
            hold_pauses_due=settings.hold_pauses_due,
            overdue_queue=settings.overdue_queue,
            overdue_priority_boost=settings.overdue_priority_boost,
            second_review_verdicts=None
            if second is None
            else sorted({verdict.value for verdict in second.verdicts}),
            second_review_min_priority=second.min_priority if second and second.verdicts else None,
            second_review_queue=review_queue,
            qa_sample_rate=settings.qa_sample_rate,
            qa_queue=qa_queue,
            require_auth_within_seconds=settings.require_auth_within_seconds,
            require_acr=settings.require_acr,
        )
    except IntegrityViolation as violation:
        if violation.kind == "foreign_key":
            return await _missing_queue_named(db, settings)
        raise
    assert row is not None
    return Queue.from_row(row)


async def _qa_queue(
    db: Database, principal: Principal, settings: QueueSettings
) -> str | InvalidInput | NotPermitted | None:
    """The QA queue the upsert names (and creates if missing), or None to leave it as it is.

    Named only when the settings give a qaQueue, or a qaSampleRate above 0 for a queue that
    has no QA queue yet (then `<name>-qa`). Like an escalation queue, it must lie in the
    admin's token, and it is worked by reviewers: an approval queue will not do. Read only
    when QA settings are given."""
    rate = settings.qa_sample_rate
    if settings.qa_queue is None and not rate:
        return None
    wanted = settings.qa_queue or default_qa_queue(settings.name)
    known = await get_queues(db, [settings.name, wanted])
    current = known.get(settings.name)
    if settings.qa_queue is None:
        if current is not None and current.qa_queue is not None:
            return None
        if not QUEUE_NAME.fullmatch(wanted):
            return InvalidInput(
                f"name a qaQueue: the default {wanted[:80]!r} is longer than a queue name may be",
                "qaQueue",
            )
    if not principal.works_in(wanted):
        return not_covered(wanted)
    existing = known.get(wanted)
    if existing is not None and existing.holder_role is not Role.REVIEWER:
        return InvalidInput(
            f"queue {wanted!r} is worked by {existing.holder_role.value}s; a QA queue is "
            "worked by reviewers",
            "qaQueue",
        )
    return wanted


async def _missing_queue_named(db: Database, settings: QueueSettings) -> InvalidInput:
    """Which of the queues the settings name does not exist: read only on that failure."""
    known = await get_queues(
        db, [name for name in (settings.escalation_queue, settings.overdue_queue) if name]
    )
    if settings.overdue_queue and settings.overdue_queue not in known:
        return InvalidInput(
            f"overdue queue {settings.overdue_queue!r} does not exist; configure it first",
            "overdueQueue",
        )
    return InvalidInput(
        f"escalation queue {settings.escalation_queue!r} does not exist; configure it first",
        "escalationQueue",
    )


async def define_reason_code(
    db: Database,
    principal: Principal,
    *,
    queue: str,
    code: str,
    label: str,
    verdicts: list[Verdict],
    requires_note: bool | None = None,
) -> ReasonCode | NotPermitted | InvalidInput:
    """requires_note: a decision giving this code must say why in its note; None leaves the
    setting as it is (off for a new code)."""
    if refusal := admin_refusal(principal, "change a reason-code catalogue", queue):
        return refusal
    if not REASON_CODE.fullmatch(code):
        return InvalidInput(
            "a reason code is 1 to 63 characters of letters, digits, '_', '.', '-'", "code"
        )
    if problem := check_label(label):
        return problem
    if not verdicts:
        return InvalidInput("name at least one verdict the code may be used with", "verdicts")
    try:
        row = await db.fetchrow(
            sql.reason_codes.REASON_CODE_UPSERT,
            queue=queue,
            code=code,
            label=label.strip(),
            verdicts=sorted({v.value for v in verdicts}),
            requires_note=requires_note,
        )
    except IntegrityViolation as violation:
        if violation.kind == "foreign_key":
            return InvalidInput(f"unknown queue {queue!r}", "queue")
        raise
    assert row is not None
    return ReasonCode.from_row(row)


async def get_queues(db: Database, names: list[str]) -> dict[str, Queue]:
    rows = await db.fetch(sql.queues.QUEUES_GET_BY_NAMES, names=names)
    return {row["name"]: Queue.from_row(row) for row in rows}


async def list_queues(db: Database, principal: Principal) -> list[Queue]:
    rows = await db.fetch(sql.queues.QUEUES_LIST)
    return [Queue.from_row(row) for row in rows if principal.works_in(row["name"])]


async def get_reason_codes(db: Database, queues: list[str]) -> dict[str, list[ReasonCode]]:
    rows = await db.fetch(sql.reason_codes.REASON_CODES_GET_BY_QUEUES, queues=queues)
    return grouped(queues, "queue", rows, ReasonCode.from_row)


async def require_queue(
    db: Database, principal: Principal, name: str
) -> Queue | NotPermitted | InvalidInput:
    """The queue a caller acts in: permission first, so no queue's existence leaks."""
    if not principal.works_in(name):
        return not_covered(name)
    queues = await get_queues(db, [name])
    if name not in queues:
        return InvalidInput(f"unknown queue {name!r}", "queue")
    return queues[name]


def admin_refusal(principal: Principal, what: str, *queues: str | None) -> NotPermitted | None:
    """Configuration is an admin's (`what` it is), within the token's queues: each of
    `queues` that is named (not None) must be one the token covers."""
    if principal.role is not Role.ADMIN:
        return NotPermitted(f"only an admin may {what}")
    for queue in queues:
        if queue is not None and not principal.works_in(queue):
            return not_covered(queue)
    return None


def not_covered(queue: str) -> NotPermitted:
    """The answer for a queue outside the token's scope, whether or not it exists: a scoped
    token learns nothing about the names of other teams' queues."""
    return NotPermitted(f"your token does not cover queue {queue[:100]!r}")
