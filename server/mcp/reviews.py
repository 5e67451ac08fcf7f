"""Ask a human and wait: the three tools' work, whatever transport carries them.

`request_human_review` enqueues one item (idempotently on its external key), `get_decision`
reads where it stands, `list_queues` names the queues the caller's token covers. Waiting
listens to the process's live updates for the item and re-reads the tables on each hint
(the tables are the truth), up to a deadline: a deadline that passes is the outcome
`timed_out`, which says nothing about what a person would decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from server.domain import reads
from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Item, Principal, Verdict
from server.domain.parsing import parse_id
from server.domain.privacy.keys import Keyring
from server.domain.privacy.notes import StoredNote
from server.domain.review import items as enqueueing
from server.domain.review.queues import list_queues
from server.events.channels import Event
from server.events.live import LiveUpdates
from server.events.subscriber import Inbox
from server.store.database import Database

Refusal = NotPermitted | InvalidInput | NotFound
Status = Literal["decided", "pending", "timed_out"]

# The payload key the question is stored under, beside the caller's payload.
QUESTION_KEY = "question"
MAX_QUESTION = 2000
# The longest a caller may ask to wait, in one call or one task.
MAX_WAIT_SECONDS = 7 * 24 * 3600
DEFAULT_WAIT_SECONDS = 300.0
# A waiter re-reads at least this often even without a hint: its token may have been revoked
# meanwhile, and a re-read is cheap.
RECHECK_SECONDS = 30.0
# A key made up for a caller that gave none; a caller that retries should give its own.
GENERATED_KEY_PREFIX = "mcp-"
# The verdicts that end a review; an escalation moves the item and it waits again.
FINAL_VERDICTS = frozenset({Verdict.APPROVE, Verdict.REJECT})


@dataclass(frozen=True)
class Requested:
    item: Item
    created: bool


@dataclass(frozen=True)
class Outcome:
    """Where one requested review stands. `decision` is set only when `status` is
    `decided`; `timed_out` means nobody decided before the deadline: never an approval."""

    status: Status
    item: Item
    decision: dict[str, Any] | None
    waited_seconds: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "item_id": str(self.item.id),
            "external_key": self.item.external_key,
            "queue": self.item.queue,
            "origin_queue": self.item.origin_queue,
            "decision": self.decision,
            "waited_seconds": self.waited_seconds,
        }

    def summary(self) -> str:
        if self.status == "decided":
            assert self.decision is not None
            return (
                f"Item {self.item.id} was decided: {self.decision['verdict']} "
                f"({self.decision['reason_code']}) by {self.decision['reviewer']}."
            )
        if self.status == "timed_out":
            return (
                f"No decision on item {self.item.id} within {self.waited_seconds:g} s. This is "
                "NOT an approval: the item still waits in queue "
                f"{self.item.queue!r}; ask again with get_decision."
            )
        return f"Item {self.item.id} waits for a decision in queue {self.item.queue!r}."


def check_wait(timeout_seconds: float) -> InvalidInput | None:
    if not 0 <= timeout_seconds <= MAX_WAIT_SECONDS:
        return InvalidInput(
            f"timeout_seconds must be between 0 and {MAX_WAIT_SECONDS}", "timeout_seconds"
        )
    return None


class Resources(Protocol):
    """What the tools use of a serving process (server.lifespan.Runtime has them)."""

    @property
    def db(self) -> Database: ...

    @property
    def live(self) -> LiveUpdates: ...

    @property
    def keyring(self) -> Keyring | None: ...


class HumanReviews:
    """The tools' work for any caller: every method takes the principal the transport
    resolved, and checks it as the GraphQL API does."""

    def __init__(self, runtime: Resources) -> None:
        self._runtime = runtime

    @property
    def _db(self) -> Database:
        return self._runtime.db

    @property
    def _keyring(self) -> Keyring | None:
        return self._runtime.keyring

    async def request(
        self,
        principal: Principal,
        *,
        queue: str,
        question: str,
        payload: dict[str, Any] | None,
        external_key: str | None = None,
        subject_ref: str | None = None,
        priority: int = 0,
    ) -> Requested | Refusal:
        if not question.strip() or len(question) > MAX_QUESTION:
            return InvalidInput(f"question must be 1 to {MAX_QUESTION} characters", "question")
        body = dict(payload or {})
        if body.get(QUESTION_KEY, question) != question:
            return InvalidInput(
                f"payload.{QUESTION_KEY} is where the question is stored: leave it out of the "
                "payload, or make it equal to the question",
                f"payload.{QUESTION_KEY}",
            )
        body[QUESTION_KEY] = question
        key = external_key or f"{GENERATED_KEY_PREFIX}{uuid.uuid4().hex}"
        done = await enqueueing.enqueue_items(
            self._db,
            principal,
            queue,
            [enqueueing.NewItem(key, body, priority, subject_ref=subject_ref)],
            self._keyring,
        )
        if isinstance(done, NotPermitted | InvalidInput):
            return done
        return Requested(done[0].item, done[0].created)

    async def outcome(self, principal: Principal, item_id: str | int) -> Outcome | Refusal:
        parsed = parse_id(str(item_id), "item_id")
        if isinstance(parsed, InvalidInput):
            return parsed
        found = (await reads.items_by_ids(self._db, [parsed])).get(parsed)
        # The caller's own request is visible from the queue it was sent to, wherever an
        # escalation took it since; anything else answers as missing.
        if found is None or not (
            principal.works_in(found.queue) or principal.works_in(found.origin_queue)
        ):
            return NotFound("item", str(item_id))
        decisions = (await reads.decisions_by_item_ids(self._db, [parsed])).get(parsed, [])
        standing = reads.effective_decision(decisions)
        if found.decided and standing is not None and standing.outcome in FINAL_VERDICTS:
            sealed = StoredNote(standing.id, standing.item_id, standing.note).sealed
            decision = {
                "decision_id": str(standing.id),
                "verdict": standing.outcome.value,
                "reason_code": standing.reason_code,
                # A note sealed under a privacy policy is not shown here.
                "note": None if sealed else standing.note,
                "reviewer": standing.reviewer,
                "decided_at": standing.decided_at.isoformat(),
                "is_overturn": standing.is_overturn,
            }
            return Outcome("decided", found, decision)
        return Outcome("pending", found, None)

    async def wait(
        self, principal: Principal, item_id: int, timeout_seconds: float
    ) -> Outcome | Refusal:
        """The outcome once decided, or `timed_out` after timeout_seconds."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout_seconds

        def concerns(event: Event) -> bool:
            return item_id in (event.item_id, *event.item_ids, *event.evidence_changed) or (
                event.more or event.cut
            )

        inbox = Inbox(accepts=concerns)
        # Listen before reading, so a decision committed in between is not missed.
        with self._runtime.live.hub.subscribe(items=(item_id,), inbox=inbox):
            while True:
                found = await self.outcome(principal, item_id)
                if not isinstance(found, Outcome) or found.status == "decided":
                    return found
                remaining = deadline - loop.time()
                if remaining <= 0:
                    waited = round(loop.time() - started, 3)
                    return Outcome("timed_out", found.item, None, waited_seconds=waited)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(inbox.next(), min(remaining, RECHECK_SECONDS))

    async def queues(self, principal: Principal) -> list[dict[str, Any]]:
        found = await list_queues(self._db, principal)
        return [
            {
                "name": queue.name,
                "escalation_queue": queue.escalation_queue,
                "due_seconds": queue.due_seconds,
                "second_review": queue.second_review is not None,
            }
            for queue in found
        ]
