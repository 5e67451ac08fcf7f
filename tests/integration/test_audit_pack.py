"""Audit packs (server/domain/quality/audit.py) of scripted items, against real PostgreSQL: the
document a known story gives, its hash, what changes it, and the queue export's batches."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from server.domain.model import Claim, Decision, Principal, Verdict
from server.domain.quality import audit
from server.domain.review.apply import claim_due, record_applied, record_failure, utcnow
from server.domain.review.decisions import (
    DecisionInput,
    OverturnInput,
    overturn_decision,
    submit_decision,
)
from server.domain.review.leases import release_lease
from server.domain.timeline.notes import add_note
from server.store.database import Database, Row, connect
from server.store.queries import P, Queries, Query
from tests.conftest import APPROVER, INTEGRATION, MANAGER, TestDatabase, reviewer
from tests.integration.helpers import CLAIMER, claim, enqueue_one, expire_lease

RITA = reviewer("rita")
ROB = reviewer("rob")
FIRST_PAYLOAD = {"applicant": "Ada Lovelace", "score": 1}
SECOND_PAYLOAD = {"applicant": "Ada Lovelace", "score": 2, "documents": ["passport"]}


# --- Written here, apart from the code under test: the canonical form, times, lease names.


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def sha256(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_name(token: UUID) -> str:
    return hashlib.sha256(str(token).encode()).hexdigest()[:15]


def event(
    kind: str,
    at: datetime,
    actor: str,
    actor_role: str,
    *,
    body: str | None = None,
    lease: tuple[UUID, str, datetime] | None = None,
    recorded_at: datetime | None = None,
    evidence_hash: str | None = None,
    decision_id: int | None = None,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "at": iso(at),
        "queue": "kyc",
        "actor": actor,
        "actor_role": actor_role,
        "body": body,
        "lease": None
        if lease is None
        else {"id": lease_name(lease[0]), "owner": lease[1], "started_at": iso(lease[2])},
        "recorded_at": iso(recorded_at),
        "evidence_hash": evidence_hash,
        "from_queue": None,
        "to_queue": None,
        "until": None,
        "decision_id": decision_id,
        "hold_reason": None,
        "assignee": None,
        "authentication_id": None,
        "notification_rule": None,
        "notification_channel": None,
        "notification_state": None,
        "notification_event": None,
        "notification_sent_at": None,
        "authentication": None,
    }


async def rows(owner: asyncpg.Connection, table: str, where: str, *args: Any) -> list[Row]:
    found: list[Row] = await owner.fetch(f"SELECT * FROM {table} WHERE {where} ORDER BY id", *args)
    return found


# --- The scripted story.


async def decide_with_note(db: Database, principal: Principal, held: Claim, note: str) -> Decision:
    decided = await submit_decision(
        db,
        principal,
        DecisionInput(
            item_id=str(held.item.id),
            lease_token=str(held.lease_token),
            verdict=Verdict.APPROVE,
            reason_code="documents_ok",
            evidence_hash=held.evidence_hash,
            note=note,
        ),
    )
    assert isinstance(decided, Decision), decided
    return decided


async def apply_once_after_a_failure(db: Database) -> None:
    """The worker's two recordings: a transient failure, then the application."""
    (due,) = await claim_due(db, 1, CLAIMER)
    state = await record_failure(
        db,
        due,
        error="503 from the receiver",
        permanent=False,
        retry_at=utcnow() - timedelta(seconds=1),
        worker="worker-1",
        started_at=utcnow(),
    )
    assert state == "pending"
    (due,) = await claim_due(db, 1, CLAIMER)
    applied = await record_applied(
        db, due, note="account opened", worker="worker-1", started_at=utcnow()
    )
    assert applied


async def overturn(db: Database, decided: Decision) -> Decision:
    result = await overturn_decision(
        db, APPROVER, OverturnInput(str(decided.id), "name_mismatch", "the photo is someone else")
    )
    assert isinstance(result, Decision), result
    return result


async def test_the_pack_of_a_scripted_item_is_the_document_its_story_gives(
    db: Database, owner_conn: asyncpg.Connection, kyc_queue: str
) -> None:
    item = await enqueue_one(db, "kyc", "app-1", FIRST_PAYLOAD)
    await enqueue_one(db, "kyc", "app-1", SECOND_PAYLOAD)
    first = await claim(db, RITA)
    released_item = await release_lease(db, RITA, str(item.id), str(first.lease_token))
    assert not hasattr(released_item, "message"), released_item
    second = await claim(db, ROB)
    await expire_lease(owner_conn, item.id)
    third = await claim(db, RITA)
    note = await add_note(db, RITA, str(item.id), "asked for a utility bill")
    assert not hasattr(note, "message"), note
    decided = await decide_with_note(db, RITA, third, "passport and bill match")
    await apply_once_after_a_failure(db)
    overturned = await overturn(db, decided)

    document = (await audit.audit_packs(db, [item.id]))[item.id]

    # The times are the database's; everything else is known from the script.
    stored = await rows(owner_conn, "item_events", "item_id = $1", item.id)
    enqueued, reuploaded, released, lapsed, noted = stored
    assert [e["kind"] for e in stored] == ["enqueued", "reuploaded", "released", "lapsed", "noted"]
    item_row = await owner_conn.fetchrow("SELECT * FROM review_items WHERE id = $1", item.id)
    assert item_row is not None
    decision_rows = await rows(owner_conn, "review_decisions", "item_id = $1", item.id)
    attempts = await rows(owner_conn, "apply_attempts", "decision_id = $1", decided.id)
    applications = {
        row["decision_id"]: row
        for row in await owner_conn.fetch(
            "SELECT a.*, p.applied_at FROM decision_applications AS a "
            "LEFT JOIN applied_decisions AS p USING (decision_id) WHERE a.decision_id = ANY($1)",
            [decided.id, overturned.id],
        )
    }
    first_hash, second_hash = sha256(FIRST_PAYLOAD), sha256(SECOND_PAYLOAD)
    rita_1 = (first.lease_token, "rita", released["lease_started_at"])
    rob = (second.lease_token, "rob", lapsed["lease_started_at"])
    rita_2 = (third.lease_token, "rita", decision_rows[0]["lease_started_at"])
    approved = decision_rows[0]
    reversed_ = decision_rows[1]
    applied = applications[decided.id]
    pending = applications[overturned.id]
    expected_pack = {
        "format": "casework.audit-pack/1",
        "item": {
            "id": item.id,
            "queue": "kyc",
            "origin_queue": "kyc",
            "external_key": "app-1",
            "kind": "review",
            "state": "decided",
            "priority": 0,
            "payload": SECOND_PAYLOAD,
            "evidence_hash": second_hash,
            # Personal data (migration 0026): an item without a policy has neither.
            "subject_ref": None,
            "policy_version": None,
            "created_at": iso(enqueued["at"]),
            "updated_at": iso(item_row["updated_at"]),
            "decided_at": iso(approved["decided_at"]),
            "lease_owner": None,
            "lease_expires_at": None,
            "lease_started_at": iso(rita_2[2]),
            "lease_count": 3,
            "abandon_count": 1,
            "escalation_count": 0,
            "assigned_to": None,
            "assigned_until": None,
            "held_until": None,
            "hold_reason": None,
            "hold_paused_due": False,
            "due_at": None,
            "reserved": False,
            "reserved_until": None,
            "barred_claimer": None,
            "awaiting_decision_id": None,
            "qa_of": None,
        },
        "payload_history": [
            {
                "kind": "enqueued",
                "evidence_hash": first_hash,
                "at": iso(enqueued["at"]),
                "actor": "kyc-provider",
                "actor_role": "integration",
            },
            {
                "kind": "reuploaded",
                "evidence_hash": second_hash,
                "at": iso(reuploaded["at"]),
                "actor": "kyc-provider",
                "actor_role": "integration",
            },
        ],
        "timeline": [
            # The lapse happened (lease_expires_at moved back a second) before the test's
            # later steps, so it sorts first: the timeline's order is the time things happened.
            event(
                "lapsed",
                lapsed["at"],
                "rob",
                "reviewer",
                lease=rob,
                recorded_at=lapsed["recorded_at"],
            ),
            event(
                "enqueued",
                enqueued["at"],
                "kyc-provider",
                "integration",
                recorded_at=enqueued["at"],
                evidence_hash=first_hash,
            ),
            event(
                "reuploaded",
                reuploaded["at"],
                "kyc-provider",
                "integration",
                recorded_at=reuploaded["at"],
                evidence_hash=second_hash,
            ),
            event("claimed", rita_1[2], "rita", "reviewer", lease=rita_1),
            event(
                "released",
                released["at"],
                "rita",
                "reviewer",
                lease=rita_1,
                recorded_at=released["at"],
            ),
            event("claimed", rob[2], "rob", "reviewer", lease=rob),
            event("claimed", rita_2[2], "rita", "reviewer", lease=rita_2),
            event(
                "noted",
                noted["at"],
                "rita",
                "reviewer",
                body="asked for a utility bill",
                recorded_at=noted["at"],
            ),
            event(
                "decided",
                approved["decided_at"],
                "rita",
                "reviewer",
                body="passport and bill match",
                lease=rita_2,
                decision_id=decided.id,
            ),
            event(
                "overturned",
                reversed_["decided_at"],
                "ann-approver",
                "approver",
                body="the photo is someone else",
                decision_id=overturned.id,
            ),
        ],
        "decisions": [
            {
                "id": decided.id,
                "item_id": item.id,
                "queue": "kyc",
                "verdict": "approve",
                "outcome": "approve",
                "reason_code": "documents_ok",
                "note": "passport and bill match",
                "evidence_hash": second_hash,
                "reviewer": "rita",
                "reviewer_role": "reviewer",
                "lease_id": lease_name(third.lease_token),
                "lease_started_at": iso(rita_2[2]),
                "lease_count": 3,
                "item_created_at": iso(enqueued["at"]),
                "decided_at": iso(approved["decided_at"]),
                "supersedes": None,
                "supersedes_decided_at": None,
                "superseded_by": overturned.id,
                "traceparent": None,
                "txid": approved["txid"],
                "provisional": False,
                "review_queue": None,
                "confirmed_by": None,
                "confirmed_at": None,
                "status": "superseded",
                "confirmation": None,
                "authentication_id": None,
                "authentication": None,
                "qa": None,
                "application": {
                    "decision_id": decided.id,
                    "idempotency_key": str(decided.id),
                    "queue": "kyc",
                    "state": "applied",
                    "attempts": 2,
                    "attempts_before_redrive": 0,
                    "last_error": None,
                    "locked_until": None,
                    "locked_by": None,
                    "redrive_key": None,
                    "decided_at": iso(approved["decided_at"]),
                    "next_attempt_at": iso(applied["next_attempt_at"]),
                    "updated_at": iso(applied["updated_at"]),
                    "applied_at": iso(applied["applied_at"]),
                    "applied_note": "account opened",
                    "history": [
                        {
                            "id": attempts[0]["id"],
                            "decision_id": decided.id,
                            "attempt": 1,
                            "worker": "worker-1",
                            "outcome": "transient",
                            "error": "503 from the receiver",
                            "started_at": iso(attempts[0]["started_at"]),
                            "finished_at": iso(attempts[0]["finished_at"]),
                            "next_retry_at": iso(attempts[0]["next_retry_at"]),
                        },
                        {
                            "id": attempts[1]["id"],
                            "decision_id": decided.id,
                            "attempt": 2,
                            "worker": "worker-1",
                            "outcome": "applied",
                            "error": None,
                            "started_at": iso(attempts[1]["started_at"]),
                            "finished_at": iso(attempts[1]["finished_at"]),
                            "next_retry_at": None,
                        },
                    ],
                },
            },
            {
                "id": overturned.id,
                "item_id": item.id,
                "queue": "kyc",
                "verdict": "overturn",
                "outcome": "reject",
                "reason_code": "name_mismatch",
                "note": "the photo is someone else",
                "evidence_hash": second_hash,
                "reviewer": "ann-approver",
                "reviewer_role": "approver",
                "lease_id": None,
                "lease_started_at": None,
                "lease_count": None,
                "item_created_at": None,
                "decided_at": iso(reversed_["decided_at"]),
                "supersedes": decided.id,
                "supersedes_decided_at": iso(approved["decided_at"]),
                "superseded_by": None,
                "traceparent": None,
                "txid": reversed_["txid"],
                "provisional": False,
                "review_queue": None,
                "confirmed_by": None,
                "confirmed_at": None,
                "status": "effective",
                "confirmation": None,
                "authentication_id": None,
                "authentication": None,
                "qa": None,
                "application": {
                    "decision_id": overturned.id,
                    "idempotency_key": str(overturned.id),
                    "queue": "kyc",
                    "state": "pending",
                    "attempts": 0,
                    "attempts_before_redrive": 0,
                    "last_error": None,
                    "locked_until": None,
                    "locked_by": None,
                    "redrive_key": None,
                    "decided_at": iso(reversed_["decided_at"]),
                    "next_attempt_at": iso(pending["next_attempt_at"]),
                    "updated_at": iso(pending["updated_at"]),
                    "applied_at": None,
                    "applied_note": None,
                    "history": [],
                },
            },
        ],
        "exceptions": [],
        "withheld": [],
    }
    assert document == {"pack": expected_pack, "sha256": sha256(expected_pack)}
    # The deciding lease is the third claim's, by the name the timeline gives it; its token
    # (a fence credential) appears nowhere.
    text = json.dumps(document)
    for held in (first, second, third):
        assert str(held.lease_token) not in text


async def test_the_hash_changes_when_anything_in_the_pack_does_and_only_then(
    db: Database, kyc_queue: str
) -> None:
    item = await enqueue_one(db, "kyc", "app-2", FIRST_PAYLOAD)
    hashes: list[str] = []

    async def read() -> None:
        document = (await audit.audit_packs(db, [item.id]))[item.id]
        assert document["sha256"] == sha256(document["pack"])
        hashes.append(document["sha256"])

    await read()
    await read()
    await enqueue_one(db, "kyc", "app-2", FIRST_PAYLOAD)  # the same payload: nothing changes
    await read()
    assert hashes[0] == hashes[1] == hashes[2]

    await enqueue_one(db, "kyc", "app-2", SECOND_PAYLOAD)
    await read()
    assert not hasattr(await add_note(db, MANAGER, str(item.id), "flagged for a sample"), "message")
    await read()
    held = await claim(db, RITA)
    await read()
    await decide_with_note(db, RITA, held, "fine")
    await read()
    (due,) = await claim_due(db, 1, CLAIMER)  # an attempt starts: the application's count moves
    await read()
    await record_failure(
        db,
        due,
        error="timeout",
        permanent=False,
        retry_at=utcnow(),
        worker="worker-1",
        started_at=utcnow(),
    )
    await read()
    await read()

    changes = hashes[2:-1]
    assert len(set(changes)) == len(changes) == 7
    assert hashes[-1] == hashes[-2]


async def test_receiver_text_and_other_teams_exceptions_are_withheld_by_role_and_scope(
    db: Database, owner_conn: asyncpg.Connection, kyc_queue: str
) -> None:
    item = await enqueue_one(db, "kyc", "app-3", FIRST_PAYLOAD)
    await decide_with_note(db, RITA, await claim(db, RITA), "fine")
    await apply_once_after_a_failure(db)

    def history_errors(document: dict[str, Any]) -> list[str | None]:
        application = document["pack"]["decisions"][0]["application"]
        return [attempt["error"] for attempt in application["history"]] + [
            application["applied_note"]
        ]

    packs = {
        who: (await audit.audit_packs(db, [item.id], audit.Viewer(principal)))[item.id]
        for who, principal in (
            ("operator", None),
            ("integration", INTEGRATION),
            ("manager", MANAGER),
            ("reviewer", RITA),
        )
    }

    assert packs["operator"] == packs["integration"]
    assert history_errors(packs["operator"]) == ["503 from the receiver", None, "account opened"]
    assert packs["operator"]["pack"]["withheld"] == []
    assert history_errors(packs["manager"]) == [None, None, None]
    assert packs["manager"]["pack"]["withheld"] == ["receiver_text"]
    assert packs["reviewer"]["pack"]["withheld"] == [
        "exceptions_outside_token_scope",
        "receiver_text",
    ]
    for copy in packs.values():
        assert copy["sha256"] == sha256(copy["pack"])


class CountingDatabase(Database):
    """Counts each statement sent and the size of each batch a cursor hands over."""

    def __init__(self, conn: asyncpg.Connection, queries: Queries) -> None:
        super().__init__(conn, queries)
        self.sent: Counter[str] = Counter()
        self.cursor_batches: list[int] = []

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        self.sent[query.name] += 1
        return await super().fetch(query, *args, **kwargs)

    async def batches(
        self, query: Query[P], size: int, *args: P.args, **kwargs: P.kwargs
    ) -> AsyncIterator[list[Row]]:
        self.sent[query.name] += 1
        async for batch in super().batches(query, size, *args, **kwargs):
            self.cursor_batches.append(len(batch))
            yield batch


async def set_created_at(owner: asyncpg.Connection, item_id: int, moment: datetime) -> None:
    await owner.execute("UPDATE review_items SET created_at = $2 WHERE id = $1", item_id, moment)


async def test_the_queue_export_reads_its_window_through_a_cursor_a_batch_at_a_time(
    db: Database,
    owner_conn: asyncpg.Connection,
    test_database: TestDatabase,
    queries: Queries,
    kyc_queue: str,
) -> None:
    since = datetime(2026, 11, 1, tzinfo=UTC)
    until = datetime(2026, 12, 1, tzinfo=UTC)
    inside = []
    for n, moment in enumerate(
        [
            since,
            since + timedelta(days=3),
            since + timedelta(days=9),
            since + timedelta(days=20),
            until - timedelta(microseconds=1),
        ]
    ):
        item = await enqueue_one(db, "kyc", f"in-{n}", {"n": n})
        await set_created_at(owner_conn, item.id, moment)
        inside.append(item.id)
        if n == 1:
            await decide_with_note(db, RITA, await claim(db, RITA), "fine")
    for key, moment in (("before", since - timedelta(microseconds=1)), ("at-until", until)):
        item = await enqueue_one(db, "kyc", key, {})
        await set_created_at(owner_conn, item.id, moment)
    other = await enqueue_one(db, "kyc-senior", "elsewhere", {})
    await set_created_at(owner_conn, other.id, since)
    expected = await audit.audit_packs(db, inside)

    conn = await connect(test_database.app_dsn)
    try:
        counting = CountingDatabase(conn, queries)
        exported = [
            line async for line in audit.export_queue(counting, "kyc", since, until, batch_size=2)
        ]
    finally:
        await conn.close()

    # Each line is the item's document in its canonical form, byte for byte (the export
    # serialises a pack once: audit.sealed_bytes), and parses back to the document.
    assert exported == [audit.pack_bytes(expected[item_id]) for item_id in inside]
    assert [json.loads(line) for line in exported] == [expected[item_id] for item_id in inside]
    assert counting.cursor_batches == [2, 2, 1]
    # Each batch costs the same statements, whatever it holds: none per item or decision.
    assert counting.sent == {
        "item_ids_get_enqueued_between": 1,
        "items_get_by_ids": 3,
        "item_events_get_pages": 3,
        "decisions_get_by_item_ids": 3,
        "applications_get_by_decision_ids": 1,
        "application_attempts_get_by_decision_ids": 1,
        "decision_confirmations_get_by_decision_ids": 1,
        "qa_get_by_decision_ids": 1,
        "exceptions_get_about_items": 3,
    }


async def test_an_effect_that_failed_for_good_brings_its_exception_into_the_items_pack(
    db: Database, owner_conn: asyncpg.Connection, kyc_queue: str
) -> None:
    item = await enqueue_one(db, "kyc", "app-4", FIRST_PAYLOAD)
    decided = await decide_with_note(db, RITA, await claim(db, RITA), "fine")
    (due,) = await claim_due(db, 1, CLAIMER)
    state = await record_failure(
        db,
        due,
        error="422 account closed",
        permanent=True,
        retry_at=utcnow(),
        worker="worker-1",
        started_at=utcnow(),
    )
    assert state == "failed"
    exception = await owner_conn.fetchrow(
        "SELECT * FROM exceptions WHERE decision_id = $1", decided.id
    )
    assert exception is not None

    packs = await audit.audit_packs(db, [item.id, exception["item_id"]])
    seen_by_rita = await audit.audit_packs(db, [item.id], audit.Viewer(RITA))

    (about_decision,) = packs[item.id]["pack"]["exceptions"]
    assert (about_decision["id"], about_decision["workflow"]) == (exception["id"], "apply_decision")
    assert about_decision["source_record_id"] == str(decided.id)
    assert about_decision["decision_id"] == decided.id
    assert "422 account closed" in about_decision["detail"]
    assert [e["kind"] for e in about_decision["events"]] == ["raised"]
    assert about_decision["corrections"] == about_decision["redrives"] == []
    # The exception's own item (in the apply_decision team's queue) has the same exception.
    assert packs[exception["item_id"]]["pack"]["exceptions"] == [about_decision]
    # A reviewer of kyc does not cover the team that owns the failure.
    assert seen_by_rita[item.id]["pack"]["exceptions"] == []
    assert "exceptions_outside_token_scope" in seen_by_rita[item.id]["pack"]["withheld"]
