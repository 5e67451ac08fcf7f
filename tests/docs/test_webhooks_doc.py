"""docs/webhooks.md says what the webhook sends: its bodies field by field, its headers, and
a signature test vector that the code (and a second, independent HMAC) reproduces."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime

from server.config import REPO_ROOT
from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.model import EffectKind, Verdict
from server.domain.review.apply import DueApplication
from server.domain.review.evidence import canonical_json
from server.effects.webhook import REDRIVE_HEADER
from server.signatures import DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, sign, verify_signature
from tests.docs.helpers import code_blocks, section

WEBHOOKS_DOC = REPO_ROOT / "docs" / "webhooks.md"

DECISION = DueApplication(
    decision_id=42,
    attempt=1,
    item_id=301,
    external_key="app-7731",
    queue="kyc",
    outcome=Verdict.APPROVE,
    is_overturn=False,
    superseded_decision_id=None,
    superseded_outcome=None,
    reason_code="documents_ok",
    note=None,
    reviewer="rita-reviewer",
    evidence_hash="16ee81ac94e66d0f7b895b018de0d653559df15a3221adf63913c001f42d670f",
    decided_at=datetime(2026, 1, 5, 9, 30, tzinfo=UTC),
    effect_kind=EffectKind.WEBHOOK,
    effect_target="https://erp.example/casework",
    effect_secret="whsec-example-0123456789",
    effect_timeout_seconds=10.0,
    effect_max_attempts=8,
)

REDRIVE = DueDelivery(
    key="supplier_onboarding:SUP-1103:v1",
    attempt=1,
    exception_id="exc_01M8PX6Y77T6KYT769YE",
    workflow="supplier_onboarding",
    source_record_id="SUP-1103",
    version=1,
    reason_code="entity_mismatch",
    completed_steps=("collect_documents", "verify_bank_account"),
    blocked_step="verify_legal_entity",
    resume_after="verify_bank_account",
    stale_steps=(),
    changes={"legalName": "Oceanic Logistics SA"},
    correction_evidence=("registry://be/0456.789.123",),
    corrected_by="rita-reviewer",
    requested_by="ann-approver",
    requested_at=datetime(2026, 1, 5, 10, 0, tzinfo=UTC),
    target="https://erp.example/redrives",
    secret="whsec-example-0123456789",
    max_attempts=8,
    timeout_seconds=10.0,
)


def table_fields(heading: str) -> list[str]:
    text = section(WEBHOOKS_DOC, heading)
    return re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE)


def test_the_decision_body_is_documented_field_by_field() -> None:
    assert sorted(table_fields("## Decision body")) == sorted(DECISION.payload())


def test_the_redrive_body_is_documented_field_by_field() -> None:
    assert sorted(table_fields("## Redrive body")) == sorted(REDRIVE.payload())


def test_the_documented_headers_are_the_ones_sent() -> None:
    (request,) = code_blocks(section(WEBHOOKS_DOC, "## The request"), "text")
    names = {line.split(":", 1)[0] for line in request.splitlines()[1:]}
    assert names == {"Content-Type", "Idempotency-Key", SIGNATURE_HEADER, REDRIVE_HEADER}


def test_the_documented_tolerance_is_the_verifier_s() -> None:
    steps = section(WEBHOOKS_DOC, "## Verifying the signature")
    assert f"more than {DEFAULT_TOLERANCE_SECONDS} seconds away" in steps


class Vector:
    """The test vector as the doc gives it."""

    def __init__(self) -> None:
        text = section(WEBHOOKS_DOC, "### Test vector")
        secret = re.search(r"With the secret `([^`]+)`", text)
        assert secret
        self.secret = secret.group(1)
        (body,) = code_blocks(text, "json")
        self.body = body.rstrip("\n").encode()
        (header,) = [
            line
            for block in code_blocks(text, "text")
            for line in block.splitlines()
            if line.startswith(f"{SIGNATURE_HEADER}: ")
        ]
        self.header = header.split(": ", 1)[1]
        fields = dict(part.split("=", 1) for part in self.header.split(","))
        self.timestamp = int(fields["t"])
        self.signature = fields["v1"]


def test_the_vector_body_is_what_casework_sends_for_that_decision() -> None:
    vector = Vector()

    assert vector.body == canonical_json(DECISION.payload())
    assert json.loads(vector.body)["decisionId"] == "42"


def test_the_vector_signature_is_casework_s_and_any_hmac_s() -> None:
    vector = Vector()
    signed = str(vector.timestamp).encode("ascii") + b"." + vector.body

    independent = hmac.new(vector.secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()

    assert independent == vector.signature
    assert sign(vector.secret, vector.body, timestamp=vector.timestamp) == vector.header


def test_the_vector_verifies_within_the_tolerance_and_not_beyond() -> None:
    vector = Vector()
    t = vector.timestamp

    def verifies(now: float, body: bytes = vector.body) -> bool:
        return verify_signature(vector.secret, vector.header, body, now=now)

    assert verifies(t)
    assert verifies(t + DEFAULT_TOLERANCE_SECONDS)
    assert verifies(t - DEFAULT_TOLERANCE_SECONDS)
    assert not verifies(t + DEFAULT_TOLERANCE_SECONDS + 1)
    assert not verifies(t - DEFAULT_TOLERANCE_SECONDS - 1)
    # Re-serialised JSON is other bytes: the doc's warning holds.
    assert not verifies(t, json.dumps(json.loads(vector.body)).encode())
    assert f"refuses it at {t + DEFAULT_TOLERANCE_SECONDS + 1} or later" in (
        section(WEBHOOKS_DOC, "### Test vector")
    )
