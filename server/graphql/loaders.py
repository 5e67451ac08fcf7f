"""Per-request DataLoaders: a nested read costs one query per kind of row."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from strawberry.dataloader import DataLoader

from server.domain import reads
from server.domain.controls import holds
from server.domain.exceptions import measures as workflow_measures
from server.domain.exceptions import reads as exception_reads
from server.domain.exceptions import workflows
from server.domain.exceptions.records import (
    Correction,
    ExceptionEvent,
    ExceptionReason,
    ExceptionRecord,
    Redrive,
)
from server.domain.measures import queues as queue_measures
from server.domain.measures.queues import MeasureKey
from server.domain.model import (
    Authentication,
    Decision,
    HoldReason,
    Item,
    ItemState,
    Principal,
    Queue,
    ReasonCode,
)
from server.domain.privacy import notes, policies, records
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.quality import audit, qa
from server.domain.review import apply, live, queues
from server.domain.timeline import events as timeline
from server.store.database import Database
from server.store.routing import ReadKind, Reads

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _loader(
    db: Database, fetch: Callable[[Database, list[K]], Awaitable[Mapping[K, V]]], missing: V
) -> DataLoader[K, V]:
    async def load(keys: list[K]) -> list[V]:
        found = await fetch(db, list(keys))
        return [found.get(key, missing) for key in keys]

    return DataLoader(load_fn=load)


@dataclass(frozen=True)
class LagKey:
    queue: str
    threshold_seconds: int


@dataclass(frozen=True)
class PageKey:
    """One page of a queue's items; pages that differ only in the queue share a query.

    `with_decisions`: the document shows the items' decisions, so they are read with the
    page, in the same batch: one statement for every page's items' decisions, sent as soon
    as the pages are in rather than after every queue's resolver has woken up and asked.
    """

    queue: str
    state: ItemState | None
    after: int
    size: int
    with_decisions: bool = False


@dataclass(frozen=True)
class DecisionPageKey:
    """One page of a queue's decisions; pages that differ only in the queue share a query."""

    queue: str
    after: int
    size: int


@dataclass(frozen=True)
class PagedItem:
    item: Item
    # None when the page was read without them.
    decisions: list[Decision] | None


@dataclass(frozen=True)
class AuditKey:
    """One item's audit pack, as one reader may see it (audit.Viewer)."""

    item_id: int
    viewer: audit.Viewer


async def _audit_packs(db: Database, keys: list[AuditKey]) -> dict[AuditKey, dict[str, Any]]:
    """Every pack a request asks for, in one snapshot: the same statements for one or many."""
    found: dict[AuditKey, dict[str, Any]] = {}
    async with db.snapshot() as snapshot:
        for viewer in {key.viewer for key in keys}:
            ids = sorted({key.item_id for key in keys if key.viewer == viewer})
            for item_id, pack in (await audit.read_packs(snapshot, ids, viewer)).items():
                found[AuditKey(item_id, viewer)] = pack
    return found


async def _lags(db: Database, keys: list[LagKey]) -> dict[LagKey, apply.ApplicationLag]:
    found: dict[LagKey, apply.ApplicationLag] = {}
    for threshold in {key.threshold_seconds for key in keys}:
        names = sorted({key.queue for key in keys if key.threshold_seconds == threshold})
        for queue, lag in (await apply.application_lags(db, names, threshold)).items():
            found[LagKey(queue, threshold)] = lag
    return found


async def _pages(db: Database, keys: list[PageKey]) -> dict[PageKey, list[PagedItem]]:
    pages: dict[PageKey, list[Item]] = {}
    for state, after, size in {(key.state, key.after, key.size) for key in keys}:
        alike = [k for k in keys if (k.state, k.after, k.size) == (state, after, size)]
        by_queue = await reads.items_pages(db, sorted({k.queue for k in alike}), state, after, size)
        for key in alike:
            pages[key] = by_queue.get(key.queue, [])
    wanted = sorted({item.id for key, page in pages.items() if key.with_decisions for item in page})
    decisions = await reads.decisions_by_item_ids(db, wanted) if wanted else {}
    return {
        key: [PagedItem(item, decisions[item.id] if key.with_decisions else None) for item in page]
        for key, page in pages.items()
    }


async def _decision_pages(
    db: Database, keys: list[DecisionPageKey]
) -> dict[DecisionPageKey, list[Decision]]:
    found: dict[DecisionPageKey, list[Decision]] = {}
    for after, size in {(key.after, key.size) for key in keys}:
        alike = [key for key in keys if (key.after, key.size) == (after, size)]
        by_queue = await reads.decisions_pages(db, sorted({k.queue for k in alike}), after, size)
        for key in alike:
            found[key] = by_queue.get(key.queue, [])
    return found


class Loaders:
    """Built on first use: most mutations read nothing nested and need none of them.

    Each loader names its kind of read; `reads` (a request's, with a read replica
    configured) decides where that kind goes (server/store/routing.py). Without it, or
    for kinds that may not lag, the loaders read `db`, the primary.
    """

    def __init__(self, db: Database, reads: Reads | None = None, *, manager: bool = False) -> None:
        self._db = db
        self._reads = reads
        # An item's page as a manager reads it may lag; the item a reviewer holds may not.
        self._item_kind = ReadKind.MANAGER_ITEM if manager else ReadKind.OWN_ITEM
        self._sealed_notes: dict[
            tuple[Principal, Keyring | None], DataLoader[int, notes.NoteReading | None]
        ] = {}
        self._decision_notes: dict[
            tuple[Principal, Keyring | None],
            DataLoader[notes.StoredNote, notes.NoteReading | None],
        ] = {}

    def sealed_notes(
        self, principal: Principal, keyring: Keyring | None
    ) -> DataLoader[int, notes.NoteReading | None]:
        """Sealed notes by event id, as `principal` may read them (None: not a sealed note)."""
        key = (principal, keyring)
        found = self._sealed_notes.get(key)
        if found is None:

            async def fetch(db: Database, ids: list[int]) -> dict[int, notes.NoteReading]:
                return await records.read_notes(db, keyring, principal, ids)

            found = self._sealed_notes[key] = _loader(self._item_db, fetch, None)
        return found

    def decision_notes(
        self, principal: Principal, keyring: Keyring | None
    ) -> DataLoader[notes.StoredNote, notes.NoteReading | None]:
        """Decisions' sealed notes, as `principal` may read them (None: stored as written)."""
        key = (principal, keyring)
        found = self._decision_notes.get(key)
        if found is None:

            async def fetch(
                db: Database, stored: list[notes.StoredNote]
            ) -> dict[notes.StoredNote, notes.NoteReading]:
                return await notes.read_decision_notes(db, keyring, principal, stored)

            found = self._decision_notes[key] = _loader(self._item_db, fetch, None)
        return found

    def _for(self, kind: ReadKind) -> Database:
        return self._db if self._reads is None else self._reads.database(kind)

    @property
    def _item_db(self) -> Database:
        return self._for(self._item_kind)

    @cached_property
    def item(self) -> DataLoader[int, Item | None]:
        return _loader(self._item_db, reads.items_by_ids, None)

    @cached_property
    def decision(self) -> DataLoader[int, Decision | None]:
        return _loader(self._item_db, reads.decisions_by_ids, None)

    @cached_property
    def authentication(self) -> DataLoader[int, Authentication | None]:
        return _loader(self._item_db, reads.authentications_by_ids, None)

    @cached_property
    def qa_check(self) -> DataLoader[int, qa.QaCheck | None]:
        return _loader(self._item_db, qa.checks_by_decision_ids, None)

    @cached_property
    def item_decisions(self) -> DataLoader[int, list[Decision]]:
        return _loader(self._item_db, reads.decisions_by_item_ids, [])

    @cached_property
    def item_events(self) -> DataLoader[timeline.PageKey, list[timeline.TimelineEvent]]:
        return _loader(self._item_db, timeline.events_pages, [])

    @cached_property
    def audit_pack(self) -> DataLoader[AuditKey, dict[str, Any] | None]:
        return _loader(self._for(ReadKind.AUDIT_PACK), _audit_packs, None)

    @cached_property
    def queue(self) -> DataLoader[str, Queue | None]:
        return _loader(self._for(ReadKind.QUEUE_LIST), queues.get_queues, None)

    @cached_property
    def application(self) -> DataLoader[int, apply.Application | None]:
        return _loader(self._item_db, apply.applications_by_decision_ids, None)

    @cached_property
    def attempts(self) -> DataLoader[int, list[apply.Attempt]]:
        return _loader(self._item_db, apply.attempts_by_decision_ids, [])

    @cached_property
    def reason_codes(self) -> DataLoader[str, list[ReasonCode]]:
        return _loader(self._for(ReadKind.CONFIGURATION), queues.get_reason_codes, [])

    @cached_property
    def privacy_policy(self) -> DataLoader[str, PrivacyPolicy | None]:
        return _loader(self._for(ReadKind.CONFIGURATION), policies.policies_by_queues, None)

    @cached_property
    def hold_reasons(self) -> DataLoader[str, list[HoldReason]]:
        return _loader(self._for(ReadKind.CONFIGURATION), holds.get_hold_reasons, [])

    @cached_property
    def queue_holds(self) -> DataLoader[str, list[queue_measures.HoldCount]]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.holds, [])

    @cached_property
    def exception(self) -> DataLoader[str, ExceptionRecord | None]:
        return _loader(self._item_db, exception_reads.exceptions_by_ids, None)

    @cached_property
    def exception_id_by_item(self) -> DataLoader[int, str | None]:
        return _loader(self._item_db, exception_reads.exception_ids_by_item_ids, None)

    @cached_property
    def exception_events(self) -> DataLoader[str, list[ExceptionEvent]]:
        return _loader(self._item_db, exception_reads.events_by_exception_ids, [])

    @cached_property
    def exception_corrections(self) -> DataLoader[str, list[Correction]]:
        return _loader(self._item_db, exception_reads.corrections_by_exception_ids, [])

    @cached_property
    def exception_redrives(self) -> DataLoader[str, list[Redrive]]:
        return _loader(self._item_db, exception_reads.redrives_by_exception_ids, [])

    @cached_property
    def exception_reasons(self) -> DataLoader[str, list[ExceptionReason]]:
        return _loader(self._for(ReadKind.CONFIGURATION), workflows.get_reasons, [])

    @cached_property
    def backlog(self) -> DataLoader[str, live.Backlog | None]:
        return _loader(self._for(ReadKind.DASHBOARD), live.queue_backlogs, None)

    @cached_property
    def application_lag(self) -> DataLoader[LagKey, apply.ApplicationLag | None]:
        return _loader(self._for(ReadKind.DASHBOARD), _lags, None)

    @cached_property
    def items_page(self) -> DataLoader[PageKey, list[PagedItem]]:
        return _loader(self._for(ReadKind.QUEUE_LIST), _pages, [])

    @cached_property
    def decisions_page(self) -> DataLoader[DecisionPageKey, list[Decision]]:
        return _loader(self._for(ReadKind.QUEUE_LIST), _decision_pages, [])

    @cached_property
    def queue_summary(self) -> DataLoader[MeasureKey, queue_measures.QueueSummary | None]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.summaries, None)

    @cached_property
    def queue_lease_counts(self) -> DataLoader[MeasureKey, queue_measures.LeaseCounts | None]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.lease_counts, None)

    @cached_property
    def queue_reasons(self) -> DataLoader[MeasureKey, list[queue_measures.ReasonCount]]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.reasons, [])

    @cached_property
    def queue_quality(self) -> DataLoader[MeasureKey, queue_measures.Quality | None]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.quality, None)

    @cached_property
    def queue_reviewers(self) -> DataLoader[MeasureKey, list[queue_measures.ReviewerMeasures]]:
        return _loader(self._for(ReadKind.MEASURES), queue_measures.reviewers, [])

    # --- Workflow measures (Workflow.measures): one statement per figure group for every
    # workflow of a request; windowed figures are keyed by (workflow, sinceSeconds).

    @cached_property
    def workflow_now(self) -> DataLoader[str, workflow_measures.WorkflowNow]:
        return _loader(
            self._for(ReadKind.MEASURES),
            workflow_measures.now_by_workflow,
            workflow_measures.NOTHING_OPEN,
        )

    @cached_property
    def workflow_ages(self) -> DataLoader[str, list[workflow_measures.ReasonAge]]:
        return _loader(self._for(ReadKind.MEASURES), workflow_measures.ages_by_workflow, [])

    @cached_property
    def workflow_activity(
        self,
    ) -> DataLoader[workflow_measures.Window, workflow_measures.WorkflowActivity]:
        return _loader(
            self._for(ReadKind.MEASURES),
            workflow_measures.activity_by_window,
            workflow_measures.NOTHING_HAPPENED,
        )

    @cached_property
    def workflow_repeats(
        self,
    ) -> DataLoader[workflow_measures.Window, list[workflow_measures.ReasonRepeat]]:
        return _loader(self._for(ReadKind.MEASURES), workflow_measures.repeats_by_window, [])
