"""A decision's note on an item under a privacy policy: sealed in place in
review_decisions.note (append-only, never rewritten), read back by the roles the policy
shows personal values to, withheld from the others, never sent to a receiver, and erased
with its subject by the shredding of the subject's keys while the row stays byte for byte
as it was. Decisions on items without a policy keep their notes as written."""

from __future__ import annotations

import base64
import itertools
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from cryptography.exceptions import InvalidTag

from server.domain.failures import StaleLease
from server.domain.model import Decision, Principal, Role, Verdict
from server.domain.privacy.erasure import ErasureRequest, approve_erasure, request_erasure
from server.domain.privacy.keys import Keyring, LocalKeyFile
from server.domain.privacy.ledger import ErasureLedger
from server.domain.privacy.notes import (
    DECISION_NOTE_PATH,
    SEALED_DECISION_NOTE,
    SEALED_NOTE_TEXT,
    NoteState,
    StoredNote,
    WithheldReason,
    read_decision_notes,
)
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.receipts import ErasureReceipt
from server.domain.privacy.sealing import NONCE_BYTES, open_sealed
from server.domain.quality.second_review import override_decision
from server.domain.review import apply
from server.domain.review.decisions import Replayed
from server.domain.text import MAX_TEXT
from server.store.database import Database
from tests.conftest import token_maker
from tests.integration import helpers
from tests.integration.helpers import CLAIMER
from tests.integration.second_review import (
    ALICE,
    BOB,
    SECOND_REVIEW_QUEUE,
    overriding,
    require_second_review,
)
from tests.privacy.erasure_helpers import enqueue as enqueue_policy_item
from tests.privacy.scan import find_canaries
from tests.privacy.shown import Call, People, claim, decision_input, enqueue

CANARY = "CANARY-DECISION-NOTE"
NOTE = f"{CANARY}: Zebediah says the bill is in his mother's maiden name"
OTHER_NOTE = f"{CANARY}: a second thought"
_keys = itertools.count(1)

DECISION = "id note noteState reviewer"
DECIDE = f"""
mutation($input: SubmitDecisionInput!) {{
  submitDecision(input: $input) {{
    __typename
    ... on DecisionRecorded {{ replay decision {{ {DECISION} }} }}
    ... on StaleLease {{ decidedUnderThisLease message }}
    ... on InvalidInput {{ field message }}
    ... on Error {{ message }}
  }}
}}
"""
OVERTURN = f"""
mutation($input: OverturnDecisionInput!) {{
  overturnDecision(input: $input) {{
    __typename
    ... on DecisionRecorded {{ decision {{ {DECISION} }} }}
    ... on Error {{ message }}
  }}
}}
"""
READ = f"""
query($id: ID!) {{
  item(id: $id) {{
    decisions {{ {DECISION} }}
    events {{ edges {{ node {{ kind body noteState }} }} }}
    auditPack
  }}
}}
"""


@pytest.fixture
def ledger(tmp_path: Path) -> ErasureLedger:
    return ErasureLedger(tmp_path / "erasure-ledger.jsonl")


async def decide(
    call: Call,
    people: People,
    note: str | None,
    *,
    queue: str = "kyc",
    verdict: str = "APPROVE",
    reason: str = "documents_ok",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what the claim answered, what the decision answered) for one new item."""
    await enqueue(call, people, f"app-{next(_keys)}", queue=queue)
    claimed, _ = await claim(call, people.reviewer, queue)
    answer = await call(
        people.reviewer, DECIDE, input={**decision_input(claimed, verdict, reason), "note": note}
    )
    return claimed, answer.data["submitDecision"]


async def recorded(call: Call, people: People, note: str | None) -> tuple[int, dict[str, Any]]:
    claimed, answer = await decide(call, people, note)
    assert answer["__typename"] == "DecisionRecorded", answer
    return int(claimed["item"]["id"]), answer["decision"]


async def read(call: Call, token: str, item_id: int) -> dict[str, Any]:
    answer = await call(token, READ, id=str(item_id))
    assert "errors" not in answer.body, answer.body
    item: dict[str, Any] = answer.data["item"]
    return item


def seen(item: dict[str, Any]) -> dict[str, Any]:
    """What a reader is shown of the item's one decision's note: on the decision, on its
    timeline entry, and in the audit pack."""
    [decision] = item["decisions"]
    [decided] = [e["node"] for e in item["events"]["edges"] if e["node"]["kind"] == "DECIDED"]
    pack = item["auditPack"]["pack"]
    [packed] = pack["decisions"]
    [entry] = [e for e in pack["timeline"] if e["kind"] == "decided"]
    return {
        "decision": (decision["note"], decision["noteState"]),
        "timeline": (decided["body"], decided["noteState"]),
        "pack": (packed["note"], packed.get("note_state"), packed.get("note_withheld")),
        "pack_timeline": (entry["body"], entry.get("note_state")),
    }


def opened(key: bytes, item_id: int, stored: str) -> Any:
    assert stored.startswith(SEALED_DECISION_NOTE)
    version, encoded = stored.removeprefix(SEALED_DECISION_NOTE).split(":")
    raw = base64.b64decode(encoded)
    return open_sealed(
        key,
        item_id=item_id,
        path=DECISION_NOTE_PATH,
        key_version=int(version),
        nonce=raw[:NONCE_BYTES],
        ciphertext=raw[NONCE_BYTES:],
    )


async def stored_note(owner_conn: asyncpg.Connection, item_id: int) -> str:
    note: str = await owner_conn.fetchval(
        "SELECT note FROM review_decisions WHERE item_id = $1", item_id
    )
    return note


async def test_the_note_is_stored_sealed_and_opens_only_for_its_item(
    call: Call,
    people: People,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
    keyring: Keyring,
    db: Database,
) -> None:
    item_id, decision = await recorded(call, people, NOTE)

    # Its writer (a reviewer: the policy shows them personal values) is answered with it.
    assert (decision["note"], decision["noteState"]) == (NOTE, "VISIBLE")
    stored = await stored_note(owner_conn, item_id)
    assert stored.startswith(f"{SEALED_DECISION_NOTE}1:")
    assert await find_canaries(owner_conn, [CANARY, NOTE]) == []
    key = await keyring.version(db, "cust-9", 1)
    assert key is not None
    assert opened(key.key, item_id, stored) == NOTE
    # The same sealed text on another item (copied into another decision) does not open.
    with pytest.raises(InvalidTag):
        opened(key.key, item_id + 1, stored)


async def test_who_reads_a_decision_note(
    call: Call,
    people: People,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
) -> None:
    item_id, _ = await recorded(call, people, NOTE)
    visible = {
        "decision": (NOTE, "VISIBLE"),
        "timeline": (NOTE, "VISIBLE"),
        "pack": (NOTE, "visible", None),
        "pack_timeline": (NOTE, "visible"),
    }
    withheld = {
        "decision": (None, "WITHHELD"),
        "timeline": (None, "WITHHELD"),
        "pack": (None, "withheld", "role"),
        "pack_timeline": (None, "withheld"),
    }
    assert seen(await read(call, people.other_reviewer, item_id)) == visible
    assert seen(await read(call, people.compliance, item_id)) == visible
    # The default policy does not show personal values to managers: not in any byte.
    answer = await call(people.manager, READ, id=str(item_id))
    assert CANARY.encode() not in answer.raw
    assert seen(answer.data["item"]) == withheld
    assert "personal_data" in answer.data["item"]["auditPack"]["pack"]["withheld"]

    # A restricted subject (an erasure deferred): compliance only.
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-9'"
    )
    restricted = await call(people.other_reviewer, READ, id=str(item_id))
    assert CANARY.encode() not in restricted.raw
    assert seen(restricted.data["item"])["decision"] == (None, "WITHHELD")
    assert seen(restricted.data["item"])["pack"] == (None, "withheld", "restricted")
    assert seen(await read(call, people.compliance, item_id)) == visible


async def test_a_retry_compares_the_note_as_written(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    claimed, first = await decide(call, people, NOTE)
    assert first["__typename"] == "DecisionRecorded", first
    submission = {**decision_input(claimed, "APPROVE", "documents_ok"), "note": NOTE}
    stored = await stored_note(owner_conn, int(claimed["item"]["id"]))

    again = (await call(people.reviewer, DECIDE, input=submission)).data["submitDecision"]
    assert again["__typename"] == "DecisionRecorded", again
    assert again["replay"] is True
    assert again["decision"] == first["decision"]

    changed = {**submission, "note": OTHER_NOTE}
    refused = (await call(people.reviewer, DECIDE, input=changed)).data["submitDecision"]
    assert refused["__typename"] == "StaleLease", refused
    assert refused["decidedUnderThisLease"] is True
    assert CANARY not in refused["message"]
    # Neither wrote anything.
    assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 1
    assert await stored_note(owner_conn, int(claimed["item"]["id"])) == stored


async def test_a_reason_code_that_requires_a_note_still_does(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    await owner_conn.execute(
        "UPDATE reason_codes SET requires_note = true WHERE queue = 'kyc' AND code = 'documents_ok'"
    )
    await enqueue(call, people, "app-1")
    claimed, _ = await claim(call, people.reviewer)
    submission = decision_input(claimed, "APPROVE", "documents_ok")
    for note in (None, "   "):
        answer = await call(people.reviewer, DECIDE, input={**submission, "note": note})
        refused = answer.data["submitDecision"]
        assert (refused["__typename"], refused["field"]) == ("InvalidInput", "note"), refused
    answer = await call(people.reviewer, DECIDE, input={**submission, "note": NOTE})
    decided = answer.data["submitDecision"]
    assert decided["__typename"] == "DecisionRecorded", decided
    assert (decided["decision"]["note"], decided["decision"]["noteState"]) == (NOTE, "VISIBLE")
    assert (await stored_note(owner_conn, int(claimed["item"]["id"]))).startswith(
        SEALED_DECISION_NOTE
    )


async def test_after_erasure_the_row_is_unchanged_and_the_note_reads_as_erased(
    call: Call,
    people: People,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
    keyring: Keyring,
    key_file: Path,
    ledger: ErasureLedger,
    db: Database,
) -> None:
    item_id, _ = await recorded(call, people, NOTE)
    # The service's own process has the subject's key cached from sealing the note.
    assert seen(await read(call, people.reviewer, item_id))["decision"] == (NOTE, "VISIBLE")
    before = await owner_conn.fetch("SELECT * FROM review_decisions ORDER BY id")
    stored = await stored_note(owner_conn, item_id)
    cora = Principal("cora", Role.COMPLIANCE, frozenset())
    request = await request_erasure(db, cora, "cust-9", "GDPR Art. 17 request")
    assert isinstance(request, ErasureRequest), request
    carl = Principal("carl", Role.COMPLIANCE, frozenset())
    receipt = await approve_erasure(db, carl, request.id, keyring, ledger)
    assert isinstance(receipt, ErasureReceipt), receipt
    assert receipt.keys_shredded == 1

    assert await owner_conn.fetch("SELECT * FROM review_decisions ORDER BY id") == before
    erased = {
        "decision": (None, "ERASED"),
        "timeline": (None, "ERASED"),
        "pack": (None, "erased", None),
        "pack_timeline": (None, "erased"),
    }
    for token in (people.reviewer, people.compliance, people.manager):
        answer = await call(token, READ, id=str(item_id))
        assert CANARY.encode() not in answer.raw
        assert seen(answer.data["item"]) == erased
    # No key opens it again: not the test's keyring, not a fresh one from the key file.
    assert await keyring.version(db, "cust-9", 1) is None
    assert await Keyring(LocalKeyFile.load(key_file)).version(db, "cust-9", 1) is None
    shredded = await owner_conn.fetchrow(
        "SELECT wrapped_key, shredded_at FROM privacy_subject_keys WHERE subject_ref = 'cust-9'"
    )
    assert shredded["wrapped_key"] is None
    assert shredded["shredded_at"] is not None
    assert stored.startswith(SEALED_DECISION_NOTE)
    assert await find_canaries(owner_conn, [CANARY, NOTE]) == []


async def test_an_overturn_note_is_sealed_and_no_receiver_is_sent_one(
    call: Call,
    people: People,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
    owner_db: Database,
    db: Database,
) -> None:
    item_id, decision = await recorded(call, people, NOTE)
    approver = await _approver(owner_db)
    answer = await call(
        approver,
        OVERTURN,
        input={"decisionId": decision["id"], "reasonCode": "name_mismatch", "note": OTHER_NOTE},
    )
    overturn = answer.data["overturnDecision"]
    assert overturn["__typename"] == "DecisionRecorded", overturn
    assert (overturn["decision"]["note"], overturn["decision"]["noteState"]) == (
        OTHER_NOTE,
        "VISIBLE",
    )
    notes = await owner_conn.fetch(
        "SELECT note FROM review_decisions WHERE item_id = $1 ORDER BY id", item_id
    )
    assert [row["note"].startswith(SEALED_DECISION_NOTE) for row in notes] == [True, True]
    assert await find_canaries(owner_conn, [CANARY]) == []
    # What a receiver is sent: the decisions, without their notes.
    await owner_conn.execute("UPDATE decision_applications SET next_attempt_at = now()")
    due = await apply.claim_due(db, 10, CLAIMER)
    assert sorted((d.decision_id, d.note) for d in due) == [
        (int(decision["id"]), None),
        (int(overturn["decision"]["id"]), None),
    ]
    assert all(d.payload()["note"] is None for d in due)


async def _approver(owner_db: Database) -> str:
    return await token_maker(owner_db)("ann", Role.APPROVER, "kyc")


async def test_a_note_too_long_to_seal_is_refused_on_a_policy_item_only(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    longest = "x" * MAX_TEXT
    claimed, refused = await decide(call, people, longest)
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "note"), refused
    assert str(SEALED_NOTE_TEXT) in refused["message"]
    assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 0

    # The bound it names fits, and opens as written.
    fits = "y" * SEALED_NOTE_TEXT
    answer = await call(
        people.reviewer,
        DECIDE,
        input={**decision_input(claimed, "APPROVE", "documents_ok"), "note": fits},
    )
    decided = answer.data["submitDecision"]
    assert decided["__typename"] == "DecisionRecorded", decided
    assert decided["decision"]["note"] == fits
    assert len(await stored_note(owner_conn, int(claimed["item"]["id"]))) <= MAX_TEXT

    # Without a policy (kyc-senior has none) a note of MAX_TEXT is stored as written.
    claimed, plain = await decide(call, people, longest, queue="kyc-senior")
    assert plain["__typename"] == "DecisionRecorded", plain
    assert (plain["decision"]["note"], plain["decision"]["noteState"]) == (longest, None)
    assert await stored_note(owner_conn, int(claimed["item"]["id"])) == longest


async def test_without_a_policy_the_note_is_kept_as_written(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    # Even text that looks sealed: only a policy item's note is ever read as sealed.
    for note in (NOTE, f"{SEALED_DECISION_NOTE}1:AAAA"):
        claimed, answer = await decide(call, people, note, queue="kyc-senior")
        assert answer["__typename"] == "DecisionRecorded", answer
        assert (answer["decision"]["note"], answer["decision"]["noteState"]) == (note, None)
        item_id = int(claimed["item"]["id"])
        assert await stored_note(owner_conn, item_id) == note
        item = await read(call, people.manager, item_id)
        assert [(d["note"], d["noteState"]) for d in item["decisions"]] == [(note, None)]
        [packed] = item["auditPack"]["pack"]["decisions"]
        assert packed["note"] == note
        assert "note_state" not in packed


async def test_a_second_reviewers_override_note_is_sealed_and_its_retry_replayed(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    await require_second_review(db)
    item = await enqueue_policy_item(db, keyring, "app-1", "cust-1", 1)
    await helpers.decide(db, ALICE, await helpers.claim(db, ALICE), Verdict.REJECT, "name_mismatch")
    bobs = await helpers.claim(db, BOB, SECOND_REVIEW_QUEUE)
    answer = overriding(bobs, note=NOTE)

    result = await override_decision(db, BOB, answer, keyring)

    assert isinstance(result, Decision), result
    assert result.note is not None
    assert result.note.startswith(SEALED_DECISION_NOTE)
    assert await find_canaries(owner_conn, [CANARY]) == []
    stored = StoredNote(result.id, item.id, result.note)
    [reading] = (await read_decision_notes(db, keyring, BOB, [stored])).values()
    assert (reading.state, reading.body) == (NoteState.VISIBLE, NOTE)
    again = await override_decision(db, BOB, answer, keyring)
    assert isinstance(again, Replayed), again
    assert again.decision.id == result.id
    other = await override_decision(db, BOB, overriding(bobs, note=OTHER_NOTE), keyring)
    assert isinstance(other, StaleLease), other
    # An operator's reading (no principal) never opens it.
    [unread] = (await read_decision_notes(db, keyring, None, [stored])).values()
    assert (unread.state, unread.body, unread.withheld_reason) == (
        NoteState.WITHHELD,
        None,
        WithheldReason.NO_PRINCIPAL,
    )
