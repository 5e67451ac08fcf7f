"""docs/privacy.md (audit packs): its verification steps, run as written, accept the pack
`casework export` writes for a policy item, before and after erasure, and refuse a
tampered digest or a value that is not the one sent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import asyncpg

from server.config import REPO_ROOT
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.quality.audit import EVERYTHING, audit_packs, pack_bytes
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION
from tests.docs.helpers import code_blocks, section
from tests.privacy.canaries import CANARY_BIRTH_DATE, CANARY_NAME, CANARY_PASSPORT, applicant

DOC = REPO_ROOT / "docs" / "privacy.md"
SENT = {
    "applicant.name": CANARY_NAME,
    "applicant.date_of_birth": CANARY_BIRTH_DATE,
    "applicant.passport_number": CANARY_PASSPORT,
}


def check(directory: Path) -> subprocess.CompletedProcess[str]:
    (steps,) = code_blocks(section(DOC, "## Verifying the evidence of a verdict"), "python")
    return subprocess.run(
        ["python3", "-c", steps], cwd=directory, capture_output=True, text=True, check=False
    )


async def write_export(db: Database, item_id: int, directory: Path) -> dict[str, object]:
    document = (await audit_packs(db, [item_id], EVERYTHING))[item_id]
    (directory / "pack.json").write_bytes(pack_bytes(document))
    return document


async def test_the_documented_steps_verify_an_export_before_and_after_erasure(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    enqueued = await enqueue_items(
        db, INTEGRATION, "kyc", [NewItem("app-1", applicant(), subject_ref="cust-9")], keyring
    )
    assert isinstance(enqueued, list), enqueued
    item_id = enqueued[0].item.id
    await write_export(db, item_id, tmp_path)
    (tmp_path / "values.json").write_text(json.dumps(SENT))
    verified = check(tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.strip() == "evidence verified"

    # A value the producer did not send does not give the digest.
    (tmp_path / "values.json").write_text(json.dumps({**SENT, "applicant.name": "Someone Else"}))
    wrong = check(tmp_path)
    assert wrong.returncode != 0
    assert "AssertionError: applicant.name" in wrong.stderr

    # A tampered digest breaks the evidence hash.
    (tmp_path / "values.json").unlink()
    pack = json.loads((tmp_path / "pack.json").read_text())
    pack["pack"]["privacy"]["fields"][0]["digest"] = "0" * 64
    (tmp_path / "pack.json").write_text(json.dumps(pack))
    assert check(tmp_path).returncode != 0

    # After erasure (as the erasure function leaves the rows): no value, no salt, and the
    # remaining digests still give the pinned hash.
    await owner_conn.execute(
        "UPDATE item_fields SET salt = NULL, nonce = NULL, ciphertext = NULL, erased_at = now() "
        "WHERE class IN ('personal', 'sensitive')"
    )
    await write_export(db, item_id, tmp_path)
    (tmp_path / "values.json").write_text(json.dumps(SENT))
    after = check(tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip() == "evidence verified"
