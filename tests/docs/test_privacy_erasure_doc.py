"""docs/privacy.md (erasure): its evidence checks work on a receipt as Casework stores
it, and refuse a tampered one; its replay command is one the parser takes."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from server.cli import _parser
from server.config import REPO_ROOT
from server.domain.privacy.receipts import ErasureReceipt, ReceiptField, ReceiptItem
from server.domain.privacy.sealing import field_digest, policy_evidence_hash
from tests.docs.helpers import code_blocks, section

DOC = REPO_ROOT / "docs" / "privacy.md"
SALT = bytes.fromhex("00112233445566778899aabbccddeeff")


def receipt() -> ErasureReceipt:
    digests = {
        "applicant.name": field_digest(b"\x01" * 16, "applicant.name", "Zoë Ångström"),
        "risk_score": field_digest(SALT, "risk_score", 71),
    }
    fields = (
        ReceiptField("applicant.name", "personal", digests["applicant.name"], True),
        ReceiptField("risk_score", "public", digests["risk_score"], False),
    )
    item = ReceiptItem(
        item_id=7,
        evidence_hash=policy_evidence_hash(3, digests),
        policy_version=3,
        erased_paths=("applicant.name",),
        fields=fields,
        verifies=True,
    )
    return ErasureReceipt(
        request_id=1,
        subject_ref="cust-1",
        erased_at=datetime(2026, 12, 6, tzinfo=UTC),
        requested_by="cora",
        approved_by="carl",
        basis="Art. 17",
        items=(item,),
        fields_erased=1,
        notes_erased=0,
        keys_shredded=1,
    )


def test_the_receipt_check_accepts_a_receipt_and_refuses_a_tampered_one(tmp_path: Path) -> None:
    check, field_check = code_blocks(section(DOC, "### Verifying evidence after erasure"), "python")
    document = receipt().to_json()
    (tmp_path / "receipt.json").write_text(json.dumps(document))
    ran = subprocess.run(
        ["python3", "-c", check], cwd=tmp_path, check=True, capture_output=True, text=True
    )
    assert "item 7:" in ran.stdout
    document["items"][0]["fields"][0]["digest"] = "0" * 64
    (tmp_path / "receipt.json").write_text(json.dumps(document))
    refused = subprocess.run(["python3", "-c", check], cwd=tmp_path, capture_output=True)
    assert refused.returncode != 0
    assert b"does not verify" in refused.stderr

    printed = subprocess.run(
        ["python3", "-c", field_check], check=True, capture_output=True, text=True
    )
    assert printed.stdout.strip() == field_digest(SALT, "risk_score", 71)


def test_the_replay_command_is_one_the_parser_takes() -> None:
    (commands,) = code_blocks(section(DOC, "## Erasure reaches backups"), "sh")
    parser = _parser()
    for line in commands.strip().splitlines():
        args = parser.parse_args(line.strip().split()[1:])
        assert callable(args.run)
