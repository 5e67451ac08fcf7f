"""docs/integrations.md's webhooks section says what a webhook sends: its bodies field by
field, its headers, and a Standard Webhooks test vector that the code, PyPI's
standardwebhooks and a second, independent HMAC reproduce (and the legacy header's, for
targets that still get it). Its Python receiver runs as written."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from server.config import REPO_ROOT
from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.model import EffectKind, Verdict
from server.domain.review.apply import DueApplication
from server.domain.review.evidence import canonical_json
from server.effects.webhook import REDRIVE_HEADER, decision_signing
from server.signatures import (
    DEFAULT_TOLERANCE_SECONDS,
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    WEBHOOK_ID_HEADER,
    WEBHOOK_SIGNATURE_HEADER,
    WEBHOOK_TIMESTAMP_HEADER,
    as_standard_secret,
    secret_refusal,
    standard_headers,
    verify_signature,
)
from tests.docs.helpers import code_blocks, section

DOC = REPO_ROOT / "docs" / "integrations.md"
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

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
    effect_secret=VECTOR_SECRET,
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
    secret=VECTOR_SECRET,
    max_attempts=8,
    timeout_seconds=10.0,
)


def part(heading: str) -> str:
    return section(DOC, heading)


def table_fields(heading: str) -> list[str]:
    return re.findall(r"^\| `(\w+)` \|", part(heading), re.MULTILINE)


def test_the_decision_body_is_documented_field_by_field() -> None:
    assert sorted(table_fields("### Decision webhook body")) == sorted(DECISION.payload())


def test_the_redrive_body_is_documented_field_by_field() -> None:
    assert sorted(table_fields("### Redrive webhook body")) == sorted(REDRIVE.payload())


def test_the_documented_headers_are_the_ones_sent() -> None:
    (request,) = code_blocks(part("### Webhook request"), "text")
    names = {line.split(":", 1)[0] for line in request.splitlines()[1:]}
    legacy = decision_signing(
        DueApplication(**{**DECISION.__dict__, "effect_legacy_headers": True})
    ).headers(b"{}")
    assert names == {"Content-Type", REDRIVE_HEADER, *legacy}
    assert set(legacy) == {
        WEBHOOK_ID_HEADER,
        WEBHOOK_TIMESTAMP_HEADER,
        WEBHOOK_SIGNATURE_HEADER,
        IDEMPOTENCY_HEADER,
        SIGNATURE_HEADER,
    }


def test_the_documented_tolerance_is_the_verifiers() -> None:
    steps = part("### Verifying a webhook")
    assert f"more than {DEFAULT_TOLERANCE_SECONDS} seconds away" in steps


def test_the_documented_secret_form_is_the_one_checked() -> None:
    text = part("### Webhook secrets")
    assert "16 to 64 random" in text
    assert secret_refusal(VECTOR_SECRET) is None
    assert secret_refusal("whsec_" + base64.b64encode(b"k" * 15).decode()) is not None
    assert secret_refusal("whsec_" + base64.b64encode(b"k" * 65).decode()) is not None


class Vector:
    """The test vector as the doc gives it."""

    def __init__(self) -> None:
        text = part("### Webhook test vector")
        secret = re.search(r"With the secret `([^`]+)`", text)
        assert secret
        self.secret = secret.group(1)
        (body,) = code_blocks(text, "json")
        self.body = body.rstrip("\n").encode()
        standard, legacy = code_blocks(text, "text")
        self.headers = dict(line.split(": ", 1) for line in standard.splitlines())
        self.legacy = dict(line.split(": ", 1) for line in legacy.splitlines())
        self.timestamp = int(self.headers[WEBHOOK_TIMESTAMP_HEADER])


def test_the_vector_body_is_what_casework_sends_for_that_decision() -> None:
    vector = Vector()

    assert vector.secret == VECTOR_SECRET
    assert vector.body == canonical_json(DECISION.payload())
    assert vector.headers[WEBHOOK_ID_HEADER] == json.loads(vector.body)["decisionId"] == "42"


def test_the_vector_signature_is_casework_s_and_any_hmac_s() -> None:
    vector = Vector()
    key = base64.b64decode(vector.secret.removeprefix("whsec_"))
    signed = f"42.{vector.timestamp}.".encode() + vector.body

    independent = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()

    assert vector.headers[WEBHOOK_SIGNATURE_HEADER] == f"v1,{independent}"
    sent = decision_signing(DECISION).headers(vector.body, timestamp=vector.timestamp)
    assert sent == vector.headers
    assert sent == standard_headers("42", vector.body, (vector.secret,), timestamp=vector.timestamp)


def test_the_vector_verifies_with_standardwebhooks_within_the_tolerance_and_not_beyond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vector = Vector()

    def verifies(now: int, body: bytes = vector.body) -> bool:
        class Frozen(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> Frozen:
                return cls.fromtimestamp(now, tz)

        monkeypatch.setattr("standardwebhooks.webhooks.datetime", Frozen)
        try:
            Webhook(vector.secret).verify(body, vector.headers)
        except WebhookVerificationError:
            return False
        return True

    t = vector.timestamp
    assert verifies(t)
    assert verifies(t + DEFAULT_TOLERANCE_SECONDS)
    assert verifies(t - DEFAULT_TOLERANCE_SECONDS)
    assert not verifies(t + DEFAULT_TOLERANCE_SECONDS + 1)
    assert not verifies(t - DEFAULT_TOLERANCE_SECONDS - 1)
    # Re-serialised JSON is other bytes: the doc's warning holds.
    assert not verifies(t, json.dumps(json.loads(vector.body)).encode())
    assert f"refuses it at {t + DEFAULT_TOLERANCE_SECONDS + 1} or later" in (
        part("### Webhook test vector")
    )


def test_the_vector_s_legacy_headers_are_casework_s() -> None:
    vector = Vector()
    legacy = DueApplication(**{**DECISION.__dict__, "effect_legacy_headers": True})

    sent = decision_signing(legacy).headers(vector.body, timestamp=vector.timestamp)

    assert {name: sent[name] for name in vector.legacy} == vector.legacy
    header = vector.legacy[SIGNATURE_HEADER]
    assert verify_signature(vector.secret, header, vector.body, now=vector.timestamp)


def test_a_plain_secret_s_whsec_form_is_what_the_doc_says() -> None:
    plain = "erp-plain-secret-from-2025"
    assert as_standard_secret(plain) == "whsec_" + base64.b64encode(plain.encode()).decode()
    assert "whsec_` followed by the base64 of the plain" in part("### Webhook secrets")


def test_the_python_receiver_runs_as_written() -> None:
    (code,) = code_blocks(part("### Verifying a webhook"), "python")
    namespace: dict[str, Any] = {"secret": VECTOR_SECRET}
    exec(compile(code, "integrations.md", "exec"), namespace)
    body = canonical_json(DECISION.payload())
    headers = standard_headers("42", body, (VECTOR_SECRET,))

    assert namespace["receive"](body, headers) == 200
    assert namespace["receive"](body.replace(b"APPROVE", b"REJECT"), headers) == 401
    assert namespace["receive"](body, {**headers, WEBHOOK_ID_HEADER: "43"}) == 401


def test_the_old_page_points_here() -> None:
    old = (REPO_ROOT / "docs" / "webhooks.md").read_text()
    assert "integrations.md#webhooks" in old
    assert len(old.strip().splitlines()) <= 3
