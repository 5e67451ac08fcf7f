"""The records the domain hands out, built from database rows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from server.domain.rows import FromRow, from_row
from server.store.database import Row

# How far an item's priority reaches either way (enqueue, and the due-time thresholds).
PRIORITY_LIMIT = 1_000_000


class Role(enum.Enum):
    REVIEWER = "reviewer"
    APPROVER = "approver"
    ADMIN = "admin"
    MANAGER = "manager"
    INTEGRATION = "integration"
    # Holds, erasure requests and approvals, relationship ends, restricted data (privacy).
    COMPLIANCE = "compliance"


class Verdict(enum.Enum):
    APPROVE = "approve"
    REJECT = "reject"
    ESCALATE = "escalate"


class EffectKind(enum.Enum):
    """How a queue's decisions are carried out."""

    NONE = "none"
    WEBHOOK = "webhook"
    HANDLER = "handler"


class DecisionStatus(enum.Enum):
    """Where a decision stands (migration 0020). Read from the append-only records, never
    stored: a provisional decision waits for its second review and is not carried out; an
    effective one is (or was, before something superseded it); a superseded one has been
    replaced by an override at second review or an approver's overturn."""

    PROVISIONAL = "provisional"
    EFFECTIVE = "effective"
    SUPERSEDED = "superseded"


# The verdicts a queue's second review may name: decisions on the subject. An escalation
# moves the item and is carried out by nobody, so there is nothing to hold back.
SECOND_REVIEW_VERDICTS = frozenset({Verdict.APPROVE, Verdict.REJECT})


@dataclass(frozen=True)
class SecondReview:
    """A queue's four-eyes setting: decisions with these verdicts (at or above the minimum
    priority, if there is one) are provisional until a second reviewer, in `queue`,
    confirms or overrides them."""

    verdicts: tuple[Verdict, ...]
    min_priority: int | None
    queue: str

    @classmethod
    def from_row(cls, row: Row) -> SecondReview | None:
        verdicts = row["second_review_verdicts"]
        if not verdicts:
            return None
        return cls(
            verdicts=tuple(sorted((Verdict(v) for v in verdicts), key=lambda v: v.value)),
            min_priority=row["second_review_min_priority"],
            queue=row["second_review_queue"],
        )


class ItemState(enum.Enum):
    """What a reader sees; `leased` is a pending item under a live lease, `parked` an
    exception's item while no one can act on it under a lease (redrive pending, closed)."""

    PENDING = "pending"
    LEASED = "leased"
    DECIDED = "decided"
    PARKED = "parked"


class Actor(TypedDict):
    """Who writes, as the statements that record it take it: `**principal.actor()`."""

    actor: str
    actor_role: str


# What makes a grant's queue a pattern (`kyc*`): no queue name may hold them.
QUEUE_PATTERN = frozenset("*?[")


class CredentialKind(enum.Enum):
    """How a caller proved who it is."""

    SESSION = "session"  # the console's cookie, after an OpenID Connect login
    JWT = "jwt"  # an access token from the configured identity provider
    CLI_TOKEN = "cli_token"  # an opaque token minted by `casework token create`


@dataclass(frozen=True)
class Grant:
    """A role, and the queues it covers, as the claim-mapping rules give it.

    queues are patterns as the rule file writes them (`kyc*`); for a role other than
    reviewer, none means every queue. rules names the rules that gave it, in rule order."""

    role: Role
    queues: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Authentication:
    """How a principal authenticated, as decisions record it (append-only).

    id is the row in `authentications` that says this, once recorded."""

    kind: CredentialKind
    issuer: str | None = None
    subject: str | None = None
    session_id: int | None = None
    token_id: int | None = None
    # The OAuth client a token was issued to (client credentials: the integration).
    client_id: str | None = None
    auth_time: datetime | None = None
    acr: str | None = None
    rules: tuple[str, ...] = ()
    id: int | None = None


@dataclass(frozen=True)
class Principal:
    """Whoever the credential belongs to, acting under one role. Never taken from an argument.

    role and queues are the active grant's (queues expanded to queue names); grants are all
    of them, for a principal the rules gave several."""

    user: str
    role: Role
    queues: frozenset[str]
    # When the credential stops working (an open websocket is closed then). It belongs to
    # the credential, not to who the caller is, so it takes no part in comparing principals.
    expires_at: datetime | None = field(default=None, compare=False)
    grants: tuple[Grant, ...] = field(default=(), compare=False)
    authentication: Authentication | None = field(default=None, compare=False)
    display_name: str | None = field(default=None, compare=False)

    def works_in(self, queue: str) -> bool:
        # A reviewer's token names its queues; for other roles an empty list means all.
        if self.role is Role.REVIEWER:
            return queue in self.queues
        return not self.queues or queue in self.queues

    def actor(self) -> Actor:
        return {"actor": self.user, "actor_role": self.role.value}

    def named_queues(self) -> list[str]:
        """The queues by name: `queues` also keeps a grant's patterns, which match none."""
        return sorted(queue for queue in self.queues if QUEUE_PATTERN.isdisjoint(queue))

    def queue_scope(self) -> list[str] | None:
        """The queues a fenced write may touch, as the SQL takes them (None: every queue)."""
        if self.role is not Role.REVIEWER and not self.queues:
            return None
        return sorted(self.queues)

    @property
    def authentication_id(self) -> int | None:
        """The recorded row of how this principal authenticated, for provenance columns."""
        return None if self.authentication is None else self.authentication.id


@dataclass(frozen=True)
class DueByPriority:
    """Items of at least this priority are due this many seconds after their enqueue."""

    min_priority: int
    due_seconds: int


@dataclass(frozen=True)
class Queue:
    name: str
    lease_ttl_seconds: int
    max_abandons: int
    escalation_queue: str | None
    escalation_priority_boost: int
    created_at: datetime
    effect_kind: EffectKind
    # The secret is never part of the record: it is read only where a body is signed.
    effect_target: str | None
    effect_max_attempts: int
    effect_timeout_seconds: float
    # Who claims here: reviewers, or approvers in a workflow's approval queue.
    holder_role: Role
    # The hands-on minutes its reviewers have a day (None: not said).
    reviewer_minutes_per_day: float | None
    # Claim controls (server/domain/review/due.py and leases.py read them); None: no limit,
    # no due time.
    max_leases_per_reviewer: int | None = None
    due_seconds: int | None = None
    due_seconds_by_priority: tuple[DueByPriority, ...] = ()
    hold_pauses_due: bool = False
    overdue_queue: str | None = None
    overdue_priority_boost: int = 100
    # Four-eyes before the effect (migration 0020); None: decisions take effect alone.
    second_review: SecondReview | None = None
    # QA sampling (migration 0021): the share of approve/reject decisions copied to
    # `qa_queue` for a check after the effect (0: none).
    qa_sample_rate: float = 0.0
    qa_queue: str | None = None
    # Step-up (migration 0023): decisions here need a sign-in at most this many seconds old,
    # and of this authentication context class (None: not required).
    require_auth_within_seconds: int | None = None
    require_acr: str | None = None
    # A webhook effect also sends Casework-Signature and Idempotency-Key (migration 0032).
    effect_legacy_headers: bool = False

    @classmethod
    def from_row(cls, row: Row) -> Queue:
        return from_row(
            cls,
            row,
            optional=("require_auth_within_seconds", "require_acr"),
            effect_kind=EffectKind(row["effect_kind"]),
            holder_role=Role(row["holder_role"]),
            due_seconds_by_priority=tuple(
                DueByPriority(entry["min_priority"], entry["due_seconds"])
                for entry in row["due_seconds_by_priority"]
            ),
            second_review=SecondReview.from_row(row),
        )


@dataclass(frozen=True)
class ReasonCode:
    queue: str
    code: str
    label: str
    verdicts: tuple[Verdict, ...]
    # A decision giving this code must carry a note that says something.
    requires_note: bool

    @classmethod
    def from_row(cls, row: Row) -> ReasonCode:
        return from_row(cls, row, verdicts=tuple(Verdict(v) for v in row["verdicts"]))


@dataclass(frozen=True)
class HoldReason(FromRow):
    queue: str
    code: str
    label: str


@dataclass(frozen=True)
class Item:
    id: int
    queue: str
    origin_queue: str
    external_key: str
    priority: int
    payload: Any
    evidence_hash: str
    decided: bool
    parked: bool
    is_exception: bool
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_count: int
    abandon_count: int
    escalation_count: int
    created_at: datetime
    decided_at: datetime | None
    # Claim controls (migration 0014). A hold or an assignment whose time has passed may
    # still be stored until a claim clears it: `held` and `assignee` say what holds now.
    assigned_to: str | None = None
    assigned_until: datetime | None = None
    held_until: datetime | None = None
    hold_reason: str | None = None
    due_at: datetime | None = None
    # The provisional decision the item waits on in a second-review queue (migration 0020),
    # and the one person who may not claim it (the decision's maker).
    awaiting_decision_id: int | None = None
    barred_claimer: str | None = None
    # A QA copy (migration 0021): the decision it checks; None for every other item.
    qa_of: int | None = None
    # On a queue with a privacy policy (migration 0026): whom the data is about, and the
    # policy version that split the payload (which is then its public part only).
    subject_ref: str | None = None
    policy_version: int | None = None
    # The item's last change: its activity time, which a search's order follows. Every
    # statement that reads items selects it; None only for an Item built without a row.
    updated_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Row) -> Item:
        return from_row(
            cls,
            row,
            optional=(
                "awaiting_decision_id",
                "barred_claimer",
                "qa_of",
                "subject_ref",
                "policy_version",
            ),
            decided=row["state"] == "decided",
            parked=row["state"] == "parked",
            is_exception=row["kind"] == "exception",
        )

    @property
    def waiting(self) -> bool:
        """Pending: neither decided nor parked."""
        return not self.decided and not self.parked

    def held(self, now: datetime) -> bool:
        return self.waiting and self.held_until is not None and self.held_until > now

    def assignee(self, now: datetime) -> str | None:
        """Who the item is reserved for now, if anyone."""
        if not self.waiting or self.assigned_to is None:
            return None
        if self.assigned_until is not None and self.assigned_until <= now:
            return None
        return self.assigned_to

    def overdue(self, now: datetime) -> bool:
        return self.waiting and self.due_at is not None and self.due_at <= now

    def state(self, now: datetime) -> ItemState:
        if self.decided:
            return ItemState.DECIDED
        if self.parked:
            return ItemState.PARKED
        if self.lease_expires_at is not None and self.lease_expires_at > now:
            return ItemState.LEASED
        return ItemState.PENDING


# The columns of a decision that not every statement selects.
_DECISION_OPTIONAL = (
    "authentication_id",
    "superseded_by",
    "lease_count",
    "lease_started_at",
    "confirmed_by",
    "confirmed_at",
    "review_queue",
)


@dataclass(frozen=True)
class Decision:
    id: int
    item_id: int
    queue: str
    is_overturn: bool
    outcome: Verdict
    reason_code: str
    note: str | None
    reviewer: str
    evidence_hash: str
    supersedes: int | None
    superseded_by: int | None
    decided_at: datetime
    # The item's leases so far, and when the lease it was made under began (migration
    # 0008; NULL on decisions recorded before it and on overturns). For the measures and
    # the metrics of handling time, not part of what the decision is, so they take no part
    # in comparing decisions.
    lease_count: int | None = field(default=None, compare=False)
    lease_started_at: datetime | None = field(default=None, compare=False)
    # Second review (migration 0020): recorded as needing one, and who confirmed it, when.
    provisional: bool = False
    confirmed_by: str | None = None
    confirmed_at: datetime | None = None
    # An override's: the second-review queue its lease was held in (None: `queue`).
    review_queue: str | None = None
    # How the decider authenticated (migration 0023; None on older rows): its row in
    # `authentications`, read by `reads.authentications_by_ids`.
    authentication_id: int | None = field(default=None, compare=False)

    @property
    def lease_queue(self) -> str:
        """The queue the lease it was made under was held in."""
        return self.review_queue or self.queue

    @property
    def status(self) -> DecisionStatus:
        if self.superseded_by is not None:
            return DecisionStatus.SUPERSEDED
        if self.provisional and self.confirmed_by is None:
            return DecisionStatus.PROVISIONAL
        return DecisionStatus.EFFECTIVE

    @property
    def is_override(self) -> bool:
        """Made at second review in place of the provisional decision it supersedes."""
        return self.supersedes is not None and not self.is_overturn

    @property
    def handling_seconds(self) -> float | None:
        if self.lease_started_at is None:
            return None
        return (self.decided_at - self.lease_started_at).total_seconds()

    @classmethod
    def from_row(cls, row: Row) -> Decision:
        return from_row(
            cls,
            row,
            optional=_DECISION_OPTIONAL,
            is_overturn=row["verdict"] == "overturn",
            outcome=Verdict(row["outcome"]),
        )


@dataclass(frozen=True)
class Claim:
    item: Item
    lease_token: UUID
    lease_expires_at: datetime

    @property
    def evidence_hash(self) -> str:
        return self.item.evidence_hash

    @classmethod
    def from_row(cls, row: Row) -> Claim:
        """An item's row with its lease's token and end."""
        return cls(Item.from_row(row), row["lease_token"], row["lease_expires_at"])


@dataclass(frozen=True)
class EnqueuedItem:
    item: Item
    created: bool
    evidence_updated: bool
    # Paths a privacy policy dropped from the payload before it was stored (never values).
    dropped_paths: tuple[str, ...] = ()
