"""Key rotation: data keys wrapped again under a new KEK, the sealed data untouched."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from server.domain.privacy.keys import KeyError_, Keyring, LocalKeyFile, write_key_file
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.rotation import rotate_keys
from server.domain.privacy.sealing import open_sealed
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.api.helpers import casework
from tests.conftest import INTEGRATION, TestDatabase

SUBJECTS = ("cust-1", "cust-2", "cust-3", "cust-4", "cust-5")


def payload(subject: str) -> dict[str, Any]:
    return {
        "applicant": {
            "name": f"Canary {subject}",
            "date_of_birth": "1961-04-12",
            "passport_number": f"P-{subject}",
        },
        "document": {"id": f"doc-{subject}"},
        "risk_score": 5,
    }


async def enqueue_subjects(db: Database, keyring: Keyring, *subjects: str) -> None:
    items = [NewItem(f"app-{s}", payload(s), subject_ref=s) for s in subjects]
    enqueued = await enqueue_items(db, INTEGRATION, "kyc", items, keyring)
    assert isinstance(enqueued, list), enqueued


async def item_fields(conn: asyncpg.Connection) -> list[tuple[Any, ...]]:
    rows = await conn.fetch("SELECT * FROM item_fields ORDER BY item_id, path")
    return [tuple(row.values()) for row in rows]


async def subject_keys(conn: asyncpg.Connection) -> dict[str, tuple[str | None, bytes | None]]:
    rows = await conn.fetch("SELECT subject_ref, kek_id, wrapped_key FROM privacy_subject_keys")
    return {row["subject_ref"]: (row["kek_id"], row["wrapped_key"]) for row in rows}


async def assert_values_open(
    db: Database, keyring: Keyring, conn: asyncpg.Connection, subjects: int = len(SUBJECTS)
) -> None:
    rows = await conn.fetch(
        "SELECT f.*, i.external_key FROM item_fields f JOIN review_items i ON i.id = f.item_id "
        "WHERE f.ciphertext IS NOT NULL ORDER BY f.item_id, f.path"
    )
    assert len(rows) == 3 * subjects
    for row in rows:
        key = await keyring.version(db, row["subject_ref"], row["key_version"])
        assert key is not None
        value = open_sealed(
            key.key,
            item_id=row["item_id"],
            path=row["path"],
            key_version=row["key_version"],
            nonce=row["nonce"],
            ciphertext=row["ciphertext"],
        )
        steps = row["path"].split(".")
        assert value == payload(row["subject_ref"])[steps[0]][steps[1]]


def key_document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def drop_key(path: Path, kek_id: str) -> None:
    document = json.loads(path.read_text())
    keys = {kid: base64.b64decode(v) for kid, v in document["keys"].items() if kid != kek_id}
    write_key_file(path, keys, document["active"])


async def test_rotation_rewraps_every_data_key_and_touches_no_sealed_value(
    db: Database,
    kyc_policy: PrivacyPolicy,
    key_file: Path,
    keyring: Keyring,
    owner_conn: asyncpg.Connection,
) -> None:
    await enqueue_subjects(db, keyring, *SUBJECTS)
    # A shredded key (an erased subject) has nothing to wrap.
    await enqueue_subjects(db, keyring, "cust-erased")
    await owner_conn.execute(
        "UPDATE privacy_subject_keys SET kek_id = NULL, wrapped_key = NULL, "
        "shredded_at = now() WHERE subject_ref = 'cust-erased'"
    )
    await owner_conn.execute("DELETE FROM item_fields WHERE subject_ref = 'cust-erased'")
    fields_before = await item_fields(owner_conn)
    keys_before = await subject_keys(owner_conn)

    # As the application role, in batches of two: the role may update those two columns.
    rotated = LocalKeyFile.load(key_file).with_new_active("k2")
    rotation = await rotate_keys(db, rotated, actor="ops", actor_role="cli", batch_size=2)

    assert rotation.kek_id == "k2"
    assert rotation.rewrapped == len(SUBJECTS)
    assert rotation.rewrapped_from == {"k1": len(SUBJECTS)}
    assert rotation.already_current == 0
    assert rotation.keys_by_kek == {"k2": len(SUBJECTS)}
    assert rotation.retired == ["k1"]
    assert await item_fields(owner_conn) == fields_before
    keys_after = await subject_keys(owner_conn)
    assert keys_after["cust-erased"] == (None, None)
    for subject in SUBJECTS:
        assert keys_before[subject][0] == "k1"
        assert keys_after[subject][0] == "k2"
        assert keys_after[subject][1] != keys_before[subject][1]

    # The old KEK goes; every value still opens, in a process that never knew it.
    drop_key(key_file, "k1")
    assert key_document(key_file)["keys"].keys() == {"k2"}
    await assert_values_open(db, Keyring(LocalKeyFile.load(key_file)), owner_conn)

    again = await rotate_keys(db, LocalKeyFile.load(key_file), actor="ops", actor_role="cli")

    assert again.rewrapped == 0
    assert again.rewrapped_from == {}
    assert again.already_current == len(SUBJECTS)
    assert await subject_keys(owner_conn) == keys_after
    assert await item_fields(owner_conn) == fields_before
    logged = await owner_conn.fetch(
        "SELECT actor, actor_role, detail FROM privacy_log WHERE action = 'key_rotated' ORDER BY id"
    )
    assert [(row["actor"], row["actor_role"]) for row in logged] == [("ops", "cli")] * 2
    assert [row["detail"] for row in logged] == [
        {
            "kek_id": "k2",
            "rewrapped": 5,
            "rewrapped_from": {"k1": 5},
            "already_current": 0,
            "keys_by_kek": {"k2": 5},
        },
        {
            "kek_id": "k2",
            "rewrapped": 0,
            "rewrapped_from": {},
            "already_current": 5,
            "keys_by_kek": {"k2": 5},
        },
    ]


async def test_a_running_process_follows_a_rotation_made_by_another(
    db: Database, kyc_policy: PrivacyPolicy, key_file: Path, owner_conn: asyncpg.Connection
) -> None:
    # The service read the file before the rotation: it knows k1 only.
    service = Keyring(LocalKeyFile.load(key_file))
    await enqueue_subjects(db, service, *SUBJECTS[:2])

    operator = LocalKeyFile.load(key_file).with_new_active("k2")
    await rotate_keys(db, operator, actor="ops", actor_role="cli")

    # A new subject's key is wrapped under the new KEK, and a key re-wrapped under it opens
    # (the service reads the file again on meeting a KEK it does not know).
    await enqueue_subjects(db, service, SUBJECTS[2])
    assert {kek for kek, _ in (await subject_keys(owner_conn)).values()} == {"k2"}
    other_service = Keyring(LocalKeyFile.load(key_file))
    drop_key(key_file, "k1")
    key = await other_service.version(db, SUBJECTS[0], 1)
    assert key is not None


async def test_a_data_key_whose_kek_is_gone_stops_the_rotation_with_its_name(
    db: Database, kyc_policy: PrivacyPolicy, key_file: Path, keyring: Keyring
) -> None:
    await enqueue_subjects(db, keyring, *SUBJECTS[:1])
    rotated = LocalKeyFile.load(key_file).with_new_active("k2")
    drop_key(key_file, "k1")

    with pytest.raises(KeyError_, match="has no key 'k1'"):
        await rotate_keys(
            db, LocalKeyFile.load(key_file), actor="ops", actor_role="cli", batch_size=1
        )
    assert rotated.active_kek_id == "k2"


async def test_the_cli_adds_a_key_rewraps_and_a_second_run_rewraps_nothing(
    test_database: TestDatabase,
    tmp_path: Path,
    db: Database,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
) -> None:
    # `casework` with CASEWORK_HOME=tmp_path reads tmp_path/keys.json.
    key_file = LocalKeyFile.create(tmp_path / "keys.json").path
    await enqueue_subjects(db, Keyring(LocalKeyFile.load(key_file)), *SUBJECTS[:2])
    fields_before = await item_fields(owner_conn)

    run = await casework(test_database, tmp_path, "privacy rotate-keys --batch-size 1")

    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"added key-encryption key 'k2' to {key_file}; it is the active one",
        "re-wrapped 2 data key(s) under 'k2' (from k1: 2); 0 were under it already",
        "data keys by key-encryption key: k2: 2",
        "no data key uses k1 any more: keep them while a backup taken before now may be "
        "restored, then remove them from the key file",
    ]
    document = key_document(key_file)
    assert document["active"] == "k2"
    assert document["keys"].keys() == {"k1", "k2"}
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert await item_fields(owner_conn) == fields_before

    again = await casework(test_database, tmp_path, "privacy rotate-keys --new-key-id k2")

    assert again.code == 0, again.stderr
    assert again.stdout.splitlines() == [
        "re-wrapped 0 data key(s) under 'k2'; 2 were under it already",
        "data keys by key-encryption key: k2: 2",
    ]
    assert key_document(key_file) == document
    actors = await owner_conn.fetch(
        "SELECT actor, actor_role FROM privacy_log WHERE action = 'key_rotated'"
    )
    assert len(actors) == 2
    assert all(r["actor"].startswith("cli") and r["actor_role"] == "cli" for r in actors)

    drop_key(key_file, "k1")
    await assert_values_open(db, Keyring(LocalKeyFile.load(key_file)), owner_conn, 2)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("--new-key-id k1x --new-key-id 'bad id'", "a key id is 1 to 100 characters"),
        ("--batch-size 0", "expected a whole number from 1 to 10000"),
    ],
)
async def test_the_cli_refuses_bad_arguments(
    test_database: TestDatabase, tmp_path: Path, arguments: str, says: str
) -> None:
    LocalKeyFile.create(tmp_path / "keys.json")

    run = await casework(test_database, tmp_path, f"privacy rotate-keys {arguments}")

    assert run.code == 2
    assert says in run.stderr


async def test_the_cli_refuses_an_inactive_key_id_and_a_missing_key_file(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    missing = await casework(test_database, tmp_path, "privacy rotate-keys")

    assert missing.code == 2
    assert f"key file {tmp_path / 'keys.json'} does not exist" in missing.stderr

    LocalKeyFile.create(tmp_path / "keys.json").with_new_active("k2")
    before = key_document(tmp_path / "keys.json")

    run = await casework(test_database, tmp_path, "privacy rotate-keys --new-key-id k1")

    assert run.code == 2
    assert "already has a key 'k1'" in run.stderr
    assert key_document(tmp_path / "keys.json") == before
