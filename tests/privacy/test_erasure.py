"""Erasure on request: four-eyes, receipts, crypto-shredding, idempotence, deferral and
restriction, evidence that still verifies, and what the application role may not do."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.domain.failures import NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.domain.privacy.erasure import (
    ErasureRequest,
    FourEyesRequired,
    approve_erasure,
    request_erasure,
)
from server.domain.privacy.holds import Hold, place_hold
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.receipts import ErasureDeferred, ErasureReceipt
from server.domain.privacy.retention import RelationshipEnded, report_relationship_ended
from server.domain.privacy.sealing import field_digest, open_sealed, policy_evidence_hash
from server.store.database import Database
from tests.conftest import ADMIN, INTEGRATION
from tests.privacy.conftest import attach_policy
from tests.privacy.erasure_helpers import (
    AML_BASIS,
    CARL,
    CORA,
    FIVE_YEARS,
    REVIEWER,
    add_retention_class,
    decide_next,
    enqueue,
    fields_of,
    log_actions,
    snapshot,
    table_text,
    utcnow,
)


@pytest.fixture
def ledger(tmp_path: Path) -> ErasureLedger:
    return ErasureLedger(tmp_path / "erasure-ledger.jsonl")


PERSONAL = ["applicant.date_of_birth", "applicant.name", "applicant.passport_number"]


async def requested(db: Database, subject: str, by: Principal = CORA) -> ErasureRequest:
    request = await request_erasure(db, by, subject, "GDPR Art. 17 request of 2026-12-01")
    assert isinstance(request, ErasureRequest), request
    return request


async def test_an_approved_erasure_shreds_the_subject_and_answers_a_receipt(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    first = await enqueue(db, keyring, "app-1", "cust-1", 1)
    second = await enqueue(db, keyring, "app-2", "cust-1", 2)
    other = await enqueue(db, keyring, "app-3", "cust-2", 3)
    await decide_next(db)
    request = await requested(db, "cust-1")

    receipt = await approve_erasure(db, CARL, request.id, keyring, ledger)

    assert isinstance(receipt, ErasureReceipt), receipt
    assert receipt.request_id == request.id
    assert receipt.subject_ref == "cust-1"
    assert (receipt.requested_by, receipt.approved_by) == ("cora-compliance", "carl-compliance")
    assert receipt.basis == "GDPR Art. 17 request of 2026-12-01"
    assert [i.item_id for i in receipt.items] == [first.id, second.id]
    assert all(list(i.erased_paths) == PERSONAL for i in receipt.items)
    assert all(i.verifies for i in receipt.items)
    assert (receipt.fields_erased, receipt.notes_erased, receipt.keys_shredded) == (6, 0, 1)
    assert receipt.held_item_ids == ()
    # Values, salts and nonces are gone; digests stay; public fields keep their salts.
    for item in (first, second):
        fields = await fields_of(owner_conn, item.id)
        for path in PERSONAL:
            f = fields[path]
            assert (f["salt"], f["nonce"], f["ciphertext"]) == (None, None, None)
            assert f["erased_at"] == receipt.erased_at
            assert len(f["digest"]) == 64
        assert fields["risk_score"]["salt"] is not None
        assert fields["risk_score"]["erased_at"] is None
    keys = await owner_conn.fetch("SELECT * FROM privacy_subject_keys ORDER BY subject_ref")
    assert [
        (k["subject_ref"], k["wrapped_key"] is None, k["shredded_at"] is None) for k in keys
    ] == [
        ("cust-1", True, False),
        ("cust-2", False, True),
    ]
    assert await keyring.version(db, "cust-1", 1) is None
    # The other subject is untouched and still opens.
    other_name = (await fields_of(owner_conn, other.id))["applicant.name"]
    key = await keyring.version(db, "cust-2", other_name["key_version"])
    assert key is not None
    assert open_sealed(
        key.key,
        item_id=other.id,
        path="applicant.name",
        key_version=other_name["key_version"],
        nonce=other_name["nonce"],
        ciphertext=other_name["ciphertext"],
    ).startswith("Zebediah Canarywood")
    assert await log_actions(owner_conn) == [
        "policy_set",
        "erasure_requested",
        "erasure_executed",
        "erasure_approved",
    ]
    [entry] = list(ledger.entries())
    assert (entry.subject_ref, entry.kind, entry.request_id) == ("cust-1", "request", request.id)
    assert entry.item_ids == (first.id, second.id)
    stored = await owner_conn.fetchval(
        "SELECT receipt FROM erasure_outcomes WHERE request_id = $1 AND outcome = 'executed'",
        request.id,
    )
    assert ErasureReceipt.from_json(stored) == receipt


async def test_the_requester_may_not_approve_and_nothing_is_written(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    request = await requested(db, "cust-1")
    before = await snapshot(owner_conn)

    refused = await approve_erasure(db, CORA, request.id, keyring, ledger)

    assert refused == FourEyesRequired(request.id)
    assert await snapshot(owner_conn) == before
    assert await owner_conn.fetchval("SELECT count(*) FROM erasure_outcomes") == 0
    assert list(ledger.entries()) == []


async def test_approving_again_answers_the_same_receipt_and_erases_nothing_new(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    request = await requested(db, "cust-1")
    receipt = await approve_erasure(db, CARL, request.id, keyring, ledger)
    assert isinstance(receipt, ErasureReceipt)
    before = await snapshot(owner_conn)
    logged = await log_actions(owner_conn)

    again = await approve_erasure(db, CARL, request.id, keyring, ledger)
    third = Principal("cleo-compliance", Role.COMPLIANCE, frozenset())
    once_more = await approve_erasure(db, third, request.id, keyring, ledger)

    assert again == receipt
    assert once_more == receipt
    assert await snapshot(owner_conn) == before
    assert await log_actions(owner_conn) == logged
    assert len(list(ledger.entries())) == 1
    # A second request for the same subject erases nothing and says so.
    later = await requested(db, "cust-1")
    empty = await approve_erasure(db, CARL, later.id, keyring, ledger)
    assert isinstance(empty, ErasureReceipt)
    assert (empty.fields_erased, empty.keys_shredded, empty.items) == (0, 0, ())
    assert await snapshot(owner_conn) == before
    assert len(list(ledger.entries())) == 1


@pytest.mark.parametrize(
    "who",
    [
        ADMIN,
        INTEGRATION,
        REVIEWER,
        Principal("ann-approver", Role.APPROVER, frozenset()),
        Principal("max-manager", Role.MANAGER, frozenset()),
    ],
)
async def test_only_the_compliance_role_requests_and_approves(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    who: Principal,
) -> None:
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    refused = await request_erasure(db, who, "cust-1", "because")
    assert isinstance(refused, NotPermitted)
    request = await requested(db, "cust-1")
    assert isinstance(await approve_erasure(db, who, request.id, keyring, ledger), NotPermitted)


async def test_a_compliance_officer_acts_on_subjects_in_its_queues_only(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, ledger: ErasureLedger
) -> None:
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    elsewhere = Principal("pia-compliance", Role.COMPLIANCE, frozenset({"payouts"}))
    assert await request_erasure(db, elsewhere, "cust-1", "basis") == NotFound("subject", "cust-1")
    assert await request_erasure(db, CORA, "nobody", "basis") == NotFound("subject", "nobody")
    request = await requested(db, "cust-1")
    # The request covers every queue; an officer of one queue may not approve it.
    assert await approve_erasure(db, elsewhere, request.id, keyring, ledger) == NotFound(
        "erasure request", str(request.id)
    )
    assert isinstance(await approve_erasure(db, CARL, 10**9, keyring, ledger), NotFound)


async def test_the_application_role_cannot_erase_or_shred_by_itself(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, app_conn: asyncpg.Connection
) -> None:
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    for statement in (
        "UPDATE item_fields SET salt = NULL, ciphertext = NULL, nonce = NULL, erased_at = now()",
        "UPDATE item_fields SET erased_at = now()",
        "UPDATE sealed_notes SET ciphertext = NULL",
        "UPDATE privacy_subject_keys SET shredded_at = now(), wrapped_key = NULL, kek_id = NULL",
        "DELETE FROM item_fields",
        "DELETE FROM privacy_subject_keys",
        "DELETE FROM privacy_log",
        "UPDATE privacy_log SET reason = 'x'",
        "DELETE FROM privacy_holds",
        "UPDATE erasure_outcomes SET receipt = '{}'",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_conn.execute(statement)
    # Clearing the key by the columns it may rewrite (rotation's) breaks the row's rule.
    with pytest.raises(asyncpg.CheckViolationError):
        await app_conn.execute("UPDATE privacy_subject_keys SET wrapped_key = NULL, kek_id = NULL")
    # The function is the one way, and refuses an action it does not know.
    with pytest.raises(asyncpg.InvalidParameterValueError):
        await app_conn.fetchval(
            "SELECT casework_erase_subject('cust-1', NULL, NULL, NULL, 'x', 'admin', 'policy_set')"
        )
    assert (await fields_of(app_conn, item.id))["applicant.name"]["ciphertext"] is not None


async def test_the_erasure_function_runs_as_its_owner_for_the_service_role_only(
    owner_conn: asyncpg.Connection,
) -> None:
    function = await owner_conn.fetchrow(
        "SELECT prosecdef, proconfig, proacl::text[] AS acl, pg_get_userbyid(proowner) AS owner "
        "FROM pg_proc WHERE proname = 'casework_erase_subject'"
    )
    assert function is not None
    assert function["prosecdef"]
    assert function["proconfig"] == ["search_path=public, pg_temp"]
    grantees = sorted(entry.split("=")[0] for entry in function["acl"])
    # The owner, and the service role; no PUBLIC entry (it would have an empty grantee).
    assert grantees == sorted([function["owner"], "casework_app"])


async def test_a_retention_period_defers_the_erasure_and_restricts_the_subject(
    db: Database,
    kyc_queue: str,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    await add_retention_class(owner_conn, "aml-5y", FIVE_YEARS, "relationship_ended")
    await attach_policy(db, kyc_queue, retention_class="aml-5y")
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    request = await requested(db, "cust-1")
    before = await snapshot(owner_conn)
    now = utcnow()

    deferred = await approve_erasure(db, CARL, request.id, keyring, ledger, now=now)

    # The relationship's end is not reported: the period has not started, its end unknown.
    assert isinstance(deferred, ErasureDeferred), deferred
    assert (deferred.basis, deferred.until, deferred.restricted_at) == (AML_BASIS, None, now)
    [reason] = deferred.reasons
    assert (reason.kind, reason.retention_class, reason.item_ids) == (
        "retention",
        "aml-5y",
        (item.id,),
    )
    assert await snapshot(owner_conn) == before
    assert (
        await owner_conn.fetchval(
            "SELECT restricted_at FROM privacy_subjects WHERE subject_ref = 'cust-1'"
        )
        == now
    )
    assert list(ledger.entries()) == []

    ended = utcnow() - timedelta(days=30)
    reported = await report_relationship_ended(db, INTEGRATION, "cust-1", ended)
    assert isinstance(reported, RelationshipEnded)
    again = await approve_erasure(db, CARL, request.id, keyring, ledger)

    assert isinstance(again, ErasureDeferred)
    assert again.until == ended + timedelta(seconds=FIVE_YEARS)
    assert again.restricted_at == now  # restricted since the first deferral
    outcomes = await owner_conn.fetch(
        "SELECT outcome, deferred_basis, deferred_until FROM erasure_outcomes ORDER BY id"
    )
    assert [tuple(o) for o in outcomes] == [
        ("deferred", AML_BASIS, None),
        ("deferred", AML_BASIS, ended + timedelta(seconds=FIVE_YEARS)),
    ]
    assert await snapshot(owner_conn) == before


async def test_a_hold_defers_the_erasure_with_its_basis_and_end(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    until = utcnow() + timedelta(days=90)
    hold = await place_hold(
        db, CARL, subject_ref=None, item_ids=[item.id], basis="Case 2026-114", until=until
    )
    assert isinstance(hold, Hold)
    request = await requested(db, "cust-1")
    before = await snapshot(owner_conn)

    deferred = await approve_erasure(db, CARL, request.id, keyring, ledger)

    assert isinstance(deferred, ErasureDeferred)
    assert (deferred.basis, deferred.until) == ("Case 2026-114", until)
    assert [(r.kind, r.hold_id) for r in deferred.reasons] == [("hold", hold.id)]
    assert await snapshot(owner_conn) == before


async def test_after_erasure_the_remaining_digests_still_reproduce_the_pinned_hash(
    db: Database,
    kyc_policy: PrivacyPolicy,
    keyring: Keyring,
    ledger: ErasureLedger,
    owner_conn: asyncpg.Connection,
) -> None:
    item = await enqueue(db, keyring, "app-1", "cust-1", 1)
    decision_id = await decide_next(db)
    decisions_before = await table_text(owner_conn, "review_decisions", "id")
    request = await requested(db, "cust-1")
    assert isinstance(await approve_erasure(db, CARL, request.id, keyring, ledger), ErasureReceipt)

    # Decisions are byte for byte what they were.
    assert await table_text(owner_conn, "review_decisions", "id") == decisions_before
    pinned = await owner_conn.fetchval(
        "SELECT evidence_hash FROM review_decisions WHERE id = $1", decision_id
    )
    fields = await fields_of(owner_conn, item.id)
    digests = {path: f["digest"] for path, f in fields.items()}
    # Step 1: the digests and the policy version give the pinned hash back.
    assert policy_evidence_hash(kyc_policy.version, digests) == pinned
    # Step 2: each value still held verifies against its own digest with its salt.
    payload = await owner_conn.fetchval("SELECT payload FROM review_items WHERE id = $1", item.id)
    for path, value in (("risk_score", payload["risk_score"]), ("document", payload["document"])):
        assert field_digest(fields[path]["salt"], path, value) == fields[path]["digest"]
    # A tampered value fails; a tampered digest fails the hash.
    assert field_digest(fields["risk_score"]["salt"], "risk_score", 72) != digests["risk_score"]
    tampered = {**digests, "applicant.name": "0" * 64}
    assert policy_evidence_hash(kyc_policy.version, tampered) != pinned
    # The erased value cannot be read back: no key, no nonce, no ciphertext.
    name = fields["applicant.name"]
    assert (name["ciphertext"], name["nonce"], name["salt"]) == (None, None, None)
    assert await keyring.version(db, "cust-1", name["key_version"]) is None

    # Guessing the value, even the right one, without the salt reproduces no digest.
    erased_digest = name["digest"]

    @settings(max_examples=200, deadline=None)
    @given(
        guess=st.one_of(st.just("Zebediah Canarywood 001"), st.text(max_size=40)),
        salt=st.one_of(st.just(b""), st.just(b"\0" * 16), st.binary(min_size=16, max_size=16)),
    )
    def guessing_does_not_confirm(guess: str, salt: bytes) -> None:
        assert field_digest(salt, "applicant.name", guess) != erased_digest

    guessing_does_not_confirm()


@settings(max_examples=300, deadline=None)
@given(value=st.text(max_size=60), guess_salt=st.binary(min_size=16, max_size=16))
def test_a_digest_is_not_reproduced_by_the_value_without_its_salt(
    value: str, guess_salt: bytes
) -> None:
    salt = os.urandom(16)
    digest = field_digest(salt, "applicant.name", value)
    if guess_salt != salt:
        assert field_digest(guess_salt, "applicant.name", value) != digest
    assert field_digest(salt, "applicant.name", value) == digest
