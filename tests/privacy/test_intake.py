"""Enqueueing under a payload policy: what is stored, dropped, refused and sealed."""

from __future__ import annotations

from typing import Any

import asyncpg

from server.domain.failures import InvalidInput
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.sealing import field_digest, open_sealed, policy_evidence_hash
from server.domain.review.evidence import evidence_hash
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION

CANARY_NAME = "Zebediah Canarywood"
CANARY_PASSPORT = "P-CANARY-440192"


def applicant(password: str | None = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "applicant": {
            "name": CANARY_NAME,
            "date_of_birth": "1961-04-12",
            "passport_number": CANARY_PASSPORT,
        },
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
        **extra,
    }
    if password is not None:
        payload["credentials"] = {"password": password}
    return payload


async def test_a_policy_item_keeps_public_values_in_the_payload_and_seals_the_rest(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    enqueued = await enqueue_items(
        db,
        INTEGRATION,
        "kyc",
        [NewItem("app-1", applicant(nickname="Zeb"), subject_ref="cust-9")],
        keyring,
    )
    assert isinstance(enqueued, list), enqueued
    [answer] = enqueued
    assert answer.created
    assert answer.dropped_paths == ("nickname",)
    item = answer.item
    assert item.payload == {"document": {"id": "doc-1", "sha256": "ab" * 32}, "risk_score": 71}
    assert item.subject_ref == "cust-9"
    assert item.policy_version == kyc_policy.version
    rows = await owner_conn.fetch(
        "SELECT * FROM item_fields WHERE item_id = $1 ORDER BY path", item.id
    )
    assert [r["path"] for r in rows] == [
        "applicant.date_of_birth",
        "applicant.name",
        "applicant.passport_number",
        "document",
        "risk_score",
    ]
    by_path = {r["path"]: r for r in rows}
    # Each digest verifies with its salt; the evidence hash is the digests' hash.
    values = {
        "applicant.date_of_birth": "1961-04-12",
        "applicant.name": CANARY_NAME,
        "applicant.passport_number": CANARY_PASSPORT,
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
    }
    for path, value in values.items():
        assert by_path[path]["digest"] == field_digest(by_path[path]["salt"], path, value)
    assert item.evidence_hash == policy_evidence_hash(
        kyc_policy.version, {p: r["digest"] for p, r in by_path.items()}
    )
    assert item.evidence_hash != evidence_hash(applicant())
    # Personal values are ciphertext only, and open with the subject's key.
    sealed = by_path["applicant.name"]
    assert CANARY_NAME.encode() not in bytes(sealed["ciphertext"])
    key = await keyring.version(db, "cust-9", sealed["key_version"])
    assert key is not None
    assert (
        open_sealed(
            key.key,
            item_id=item.id,
            path="applicant.name",
            key_version=sealed["key_version"],
            nonce=sealed["nonce"],
            ciphertext=sealed["ciphertext"],
        )
        == CANARY_NAME
    )
    assert by_path["risk_score"]["ciphertext"] is None


async def test_the_same_payload_again_changes_nothing(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    first = await enqueue_items(
        db, INTEGRATION, "kyc", [NewItem("app-1", applicant(), subject_ref="cust-9")], keyring
    )
    again = await enqueue_items(
        db, INTEGRATION, "kyc", [NewItem("app-1", applicant(), subject_ref="cust-9")], keyring
    )
    assert isinstance(first, list)
    assert isinstance(again, list)
    assert not again[0].created
    assert not again[0].evidence_updated
    assert again[0].item.evidence_hash == first[0].item.evidence_hash
    assert await owner_conn.fetchval("SELECT count(*) FROM item_fields") == 5


async def test_a_secret_refuses_the_batch_and_reaches_nothing(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    refused = await enqueue_items(
        db,
        INTEGRATION,
        "kyc",
        [
            NewItem("app-1", applicant(), subject_ref="cust-1"),
            NewItem("app-2", applicant(password="hunter2-CANARY"), subject_ref="cust-2"),
        ],
        keyring,
    )
    assert isinstance(refused, InvalidInput)
    assert "credentials.password" in refused.message
    assert "hunter2" not in refused.message
    assert refused.field == "items[1].payload"
    assert await owner_conn.fetchval("SELECT count(*) FROM review_items") == 0


async def test_a_policy_queue_needs_a_subject(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    refused = await enqueue_items(db, INTEGRATION, "kyc", [NewItem("app-1", applicant())], keyring)
    assert isinstance(refused, InvalidInput)
    assert refused.field == "items[0].subjectRef"
