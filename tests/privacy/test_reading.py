"""Reading policy items: each field's state and value for a reader, and the payload made of
what that reader is shown."""

from __future__ import annotations

import asyncpg

from server.domain.model import Item, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import FieldClass, PrivacyPolicy
from server.domain.privacy.reading import FieldState, read_items
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION, MANAGER, reviewer
from tests.privacy.test_intake import CANARY_NAME, CANARY_PASSPORT, applicant

REVIEWER = reviewer("rita", "kyc")


async def enqueue(
    db: Database, keyring: Keyring, *keys: str, subject: str = "cust-9"
) -> list[Item]:
    enqueued = await enqueue_items(
        db,
        INTEGRATION,
        "kyc",
        [NewItem(k, applicant(), subject_ref=subject) for k in keys],
        keyring,
    )
    assert isinstance(enqueued, list), enqueued
    return [answer.item for answer in enqueued]


async def test_a_reviewer_sees_personal_values_and_sensitive_ones_masked(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    states = {f.path: (f.field_class, f.state) for f in view.fields}
    assert states == {
        "applicant.date_of_birth": (FieldClass.PERSONAL, FieldState.VISIBLE),
        "applicant.name": (FieldClass.PERSONAL, FieldState.VISIBLE),
        "applicant.passport_number": (FieldClass.SENSITIVE, FieldState.MASKED),
        "document": (FieldClass.REFERENCE, FieldState.VISIBLE),
        "risk_score": (FieldClass.PUBLIC, FieldState.VISIBLE),
    }
    assert view.payload == {
        "applicant": {"date_of_birth": "1961-04-12", "name": CANARY_NAME},
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
    }
    assert CANARY_PASSPORT not in repr(view)
    assert view.field("applicant.passport_number").value is None  # type: ignore[union-attr]


async def test_a_manager_sees_public_and_reference_values_only(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    view = (await read_items(db, MANAGER, [item], keyring))[item.id]
    assert {f.path: f.state for f in view.fields} == {
        "applicant.date_of_birth": FieldState.WITHHELD,
        "applicant.name": FieldState.WITHHELD,
        "applicant.passport_number": FieldState.WITHHELD,
        "document": FieldState.VISIBLE,
        "risk_score": FieldState.VISIBLE,
    }
    assert view.payload == {"document": {"id": "doc-1", "sha256": "ab" * 32}, "risk_score": 71}


async def test_a_restricted_subject_is_withheld_but_from_compliance(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-9'"
    )
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    assert {f.state for f in view.fields} == {FieldState.WITHHELD}
    assert view.payload == {}
    seen = (await read_items(db, Role.COMPLIANCE, [item], keyring))[item.id]
    assert seen.payload["applicant"] == {"date_of_birth": "1961-04-12", "name": CANARY_NAME}
    assert seen.field("applicant.passport_number").state is FieldState.MASKED  # type: ignore[union-attr]


async def test_an_erased_field_reads_as_erased(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    await owner_conn.execute(
        "UPDATE item_fields SET erased_at = now(), salt = NULL, nonce = NULL, ciphertext = NULL"
        " WHERE item_id = $1 AND path = 'applicant.name'",
        item.id,
    )
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    assert view.field("applicant.name").state is FieldState.ERASED  # type: ignore[union-attr]
    assert view.payload["applicant"] == {"date_of_birth": "1961-04-12"}
