"""Audit packs and `casework export` of items under a privacy policy: each reader gets what
it may see and a list of what was withheld and why; nothing sensitive is ever opened, an
operator's export opens nothing sealed at all; the digests, salts, policy version and
evidence hash let an auditor verify the evidence (docs/privacy.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from server.domain.model import Item, Principal, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.sealing import field_digest, policy_evidence_hash
from server.domain.quality.audit import EVERYTHING, Viewer, audit_packs, export_queue
from server.domain.review.items import NewItem, enqueue_items
from server.domain.timeline.notes import add_note
from server.store.database import Database
from tests.api.helpers import casework
from tests.conftest import INTEGRATION, MANAGER, TestDatabase, reviewer
from tests.privacy.canaries import (
    CANARY_BIRTH_DATE,
    CANARY_NAME,
    CANARY_NOTE,
    CANARY_PASSPORT,
    PERSONAL_CANARIES,
    applicant,
)

RITA = reviewer("rita", "kyc")
CORA = Principal("cora", Role.COMPLIANCE, frozenset({"kyc"}))
DOCUMENT = {"id": "doc-1", "sha256": "ab" * 32}


async def enqueue_with_note(db: Database, keyring: Keyring) -> Item:
    enqueued = await enqueue_items(
        db, INTEGRATION, "kyc", [NewItem("app-1", applicant(), subject_ref="cust-9")], keyring
    )
    assert isinstance(enqueued, list), enqueued
    item = enqueued[0].item
    noted = await add_note(db, RITA, str(item.id), CANARY_NOTE, keyring)
    assert not hasattr(noted, "message"), noted
    return item


async def pack_of(db: Database, item: Item, viewer: Viewer) -> dict[str, Any]:
    document = (await audit_packs(db, [item.id], viewer))[item.id]
    pack: dict[str, Any] = document["pack"]
    return pack


def note_entry(pack: dict[str, Any]) -> dict[str, Any]:
    [note] = [entry for entry in pack["timeline"] if entry["kind"] == "noted"]
    return {key: note[key] for key in ("body", "note_state", "note_withheld")}


def verify(privacy: dict[str, Any]) -> None:
    """The auditor's steps (docs/privacy.md): the digests and the policy
    version give the evidence hash; each value shown, with its salt, gives its digest."""
    digests = {entry["path"]: entry["digest"] for entry in privacy["fields"]}
    assert policy_evidence_hash(privacy["policy_version"], digests) == privacy["evidence_hash"]
    for entry in privacy["fields"]:
        if "value" in entry and entry["salt"] is not None:
            salt = bytes.fromhex(entry["salt"])
            assert field_digest(salt, entry["path"], entry["value"]) == entry["digest"]


async def test_a_reviewers_pack_shows_personal_values_and_withholds_the_sensitive_one(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    item = await enqueue_with_note(db, keyring)
    pack = await pack_of(db, item, Viewer(RITA, keyring))
    privacy = pack["privacy"]
    assert privacy["policy_version"] == kyc_policy.version
    assert privacy["subject_ref"] == "cust-9"
    assert privacy["evidence_hash"] == item.evidence_hash == pack["item"]["evidence_hash"]
    shown = {e["path"]: (e["class"], e["state"], e.get("value")) for e in privacy["fields"]}
    assert shown == {
        "applicant.date_of_birth": ("personal", "visible", CANARY_BIRTH_DATE),
        "applicant.name": ("personal", "visible", CANARY_NAME),
        "applicant.passport_number": ("sensitive", "masked", None),
        "document": ("reference", "visible", DOCUMENT),
        "risk_score": ("public", "visible", 71),
    }
    salts = {e["path"]: e["salt"] is not None for e in privacy["fields"]}
    assert salts == {
        "applicant.date_of_birth": True,
        "applicant.name": True,
        "applicant.passport_number": False,  # not shown: its salt would confirm guesses
        "document": True,
        "risk_score": True,
    }
    assert privacy["withheld"] == [
        {"path": "applicant.passport_number", "class": "sensitive", "reason": "masked"}
    ]
    assert "personal_data" in pack["withheld"]
    assert pack["item"]["payload"] == {
        "applicant": {"name": CANARY_NAME, "date_of_birth": CANARY_BIRTH_DATE},
        "document": DOCUMENT,
        "risk_score": 71,
    }
    assert note_entry(pack) == {"body": CANARY_NOTE, "note_state": "visible", "note_withheld": None}
    assert CANARY_PASSPORT not in json.dumps(pack)
    verify(privacy)


async def test_a_managers_pack_withholds_personal_data_and_its_salts(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    item = await enqueue_with_note(db, keyring)
    pack = await pack_of(db, item, Viewer(MANAGER, keyring))
    privacy = pack["privacy"]
    assert privacy["withheld"] == [
        {"path": "applicant.date_of_birth", "class": "personal", "reason": "role"},
        {"path": "applicant.name", "class": "personal", "reason": "role"},
        {"path": "applicant.passport_number", "class": "sensitive", "reason": "role"},
    ]
    for entry in privacy["fields"]:
        if entry["class"] in ("personal", "sensitive"):
            assert (entry["state"], entry["salt"], "value" in entry) == ("withheld", None, False)
    assert note_entry(pack) == {"body": None, "note_state": "withheld", "note_withheld": "role"}
    text = json.dumps(pack)
    assert [canary for canary in PERSONAL_CANARIES if canary in text] == []
    verify(privacy)


async def test_a_restricted_subject_is_withheld_from_all_but_compliance(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_with_note(db, keyring)
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-9'"
    )
    pack = await pack_of(db, item, Viewer(RITA, keyring))
    reasons = {entry["path"]: entry["reason"] for entry in pack["privacy"]["withheld"]}
    # Restricted: every field, public ones included (reading.field_state).
    assert reasons == {
        "applicant.date_of_birth": "restricted",
        "applicant.name": "restricted",
        "applicant.passport_number": "restricted",
        "document": "restricted",
        "risk_score": "restricted",
    }
    assert pack["item"]["payload"] == {}
    assert note_entry(pack)["note_withheld"] == "restricted"
    compliance = await pack_of(db, item, Viewer(CORA, keyring))
    assert note_entry(compliance)["body"] == CANARY_NOTE
    assert [e["path"] for e in compliance["privacy"]["withheld"]] == ["applicant.passport_number"]


async def test_the_operators_export_opens_nothing_sealed_and_carries_every_salt(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    item = await enqueue_with_note(db, keyring)
    now = datetime.now(UTC)
    lines = [
        json.loads(line)
        async for line in export_queue(db, "kyc", now - timedelta(hours=1), now + timedelta(1))
    ]
    assert [line["pack"]["item"]["id"] for line in lines] == [item.id]
    single = await audit_packs(db, [item.id], EVERYTHING)
    assert lines[0] == single[item.id]
    pack = lines[0]["pack"]
    privacy = pack["privacy"]
    states = {e["path"]: (e["state"], e["salt"] is not None) for e in privacy["fields"]}
    assert states == {
        "applicant.date_of_birth": ("withheld", True),
        "applicant.name": ("withheld", True),
        "applicant.passport_number": ("withheld", True),
        "document": ("visible", True),
        "risk_score": ("visible", True),
    }
    assert {e["reason"] for e in privacy["withheld"]} == {"no_principal"}
    assert note_entry(pack) == {
        "body": None,
        "note_state": "withheld",
        "note_withheld": "no_principal",
    }
    text = json.dumps(lines)
    assert [canary for canary in PERSONAL_CANARIES if canary in text] == []
    verify(privacy)
    # With the salts, an auditor holding the values the producer sent checks each digest.
    sent = {
        "applicant.date_of_birth": CANARY_BIRTH_DATE,
        "applicant.name": CANARY_NAME,
        "applicant.passport_number": CANARY_PASSPORT,
    }
    for entry in privacy["fields"]:
        if entry["path"] in sent:
            salt = bytes.fromhex(entry["salt"])
            assert field_digest(salt, entry["path"], sent[entry["path"]]) == entry["digest"]


async def test_after_erasure_the_remaining_digests_still_verify_the_pinned_hash(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_with_note(db, keyring)
    # As the erasure function leaves the rows: values and salts gone, digests kept.
    await owner_conn.execute(
        "UPDATE item_fields SET salt = NULL, nonce = NULL, ciphertext = NULL, erased_at = now() "
        "WHERE class IN ('personal', 'sensitive')"
    )
    await owner_conn.execute(
        "UPDATE sealed_notes SET nonce = NULL, ciphertext = NULL, erased_at = now()"
    )
    for viewer in (EVERYTHING, Viewer(RITA, keyring), Viewer(CORA, keyring)):
        pack = await pack_of(db, item, viewer)
        privacy = pack["privacy"]
        erased = [e["path"] for e in privacy["fields"] if e["state"] == "erased"]
        assert erased == ["applicant.date_of_birth", "applicant.name", "applicant.passport_number"]
        assert all(e["salt"] is None for e in privacy["fields"] if e["state"] == "erased")
        assert privacy["withheld"] == []
        assert note_entry(pack) == {"body": None, "note_state": "erased", "note_withheld": None}
        verify(privacy)


async def test_packs_of_items_without_a_policy_carry_no_privacy_part(
    db: Database, kyc_queue: str
) -> None:
    enqueued = await enqueue_items(db, INTEGRATION, "kyc", [NewItem("plain-1", {"x": 1})])
    assert isinstance(enqueued, list), enqueued
    item = enqueued[0].item
    await add_note(db, RITA, str(item.id), "plain words")
    pack = await pack_of(db, item, Viewer(RITA))
    assert "privacy" not in pack
    assert "personal_data" not in pack["withheld"]
    [note] = [entry for entry in pack["timeline"] if entry["kind"] == "noted"]
    assert note["body"] == "plain words"
    assert "note_state" not in note


async def test_casework_export_writes_the_operators_pack_and_no_personal_value(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    test_database: TestDatabase,
    tmp_path: Path,
) -> None:
    item = await enqueue_with_note(db, keyring)
    expected = (await audit_packs(db, [item.id], EVERYTHING))[item.id]
    one = await casework(test_database, tmp_path, f"export item {item.id}")
    assert one.code == 0, one.stderr
    day = datetime.now(UTC).date()
    window = f"--since {day - timedelta(days=1)} --until {day + timedelta(days=2)}"
    queue = await casework(test_database, tmp_path, f"export queue kyc {window}")
    assert queue.code == 0, queue.stderr
    assert json.loads(one.stdout) == expected
    assert [json.loads(line) for line in queue.stdout.splitlines()] == [expected]
    assert expected["pack"]["privacy"]["withheld"] != []
    for written in (one.stdout, one.stderr, queue.stdout, queue.stderr):
        assert [canary for canary in PERSONAL_CANARIES if canary in written] == []
