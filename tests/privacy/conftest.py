"""Fixtures for the personal-data tests: a key file of the test's own and a policy queue."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.domain.model import Role
from server.domain.privacy.keys import Keyring, LocalKeyFile
from server.domain.privacy.policies import PolicyInput, set_privacy_policy
from server.domain.privacy.policy import FieldClass, PrivacyPolicy, Unlisted
from server.store.database import Database
from tests.conftest import ADMIN
from tests.privacy.http import gql, kyc, tokens  # noqa: F401  (fixtures)
from tests.privacy.shown import call, people, privacy_client  # noqa: F401  (fixtures)

# What a KYC producer sends: a name and date of birth (personal), a passport number
# (sensitive), the document's reference, a public risk score, and a password sent by mistake.
KYC_FIELDS = {
    "applicant.name": FieldClass.PERSONAL,
    "applicant.date_of_birth": FieldClass.PERSONAL,
    "applicant.passport_number": FieldClass.SENSITIVE,
    "document": FieldClass.REFERENCE,
    "risk_score": FieldClass.PUBLIC,
    "credentials.password": FieldClass.SECRET,
}


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return LocalKeyFile.create(tmp_path / "keys.json").path


@pytest.fixture
def keyring(key_file: Path) -> Keyring:
    return Keyring(LocalKeyFile.load(key_file))


async def attach_policy(
    db: Database,
    queue: str,
    fields: dict[str, FieldClass] | None = None,
    unlisted: Unlisted = Unlisted.DROP,
    visible: dict[Role, list[FieldClass]] | None = None,
    retention_class: str | None = None,
) -> PrivacyPolicy:
    policy = await set_privacy_policy(
        db,
        ADMIN,
        queue,
        PolicyInput(
            fields=fields or KYC_FIELDS,
            unlisted=unlisted,
            visible=visible,
            retention_class=retention_class,
        ),
    )
    assert isinstance(policy, PrivacyPolicy), policy
    return policy


@pytest.fixture
async def kyc_policy(db: Database, kyc_queue: str) -> PrivacyPolicy:
    """Queue `kyc` (tests/conftest.py) under KYC_FIELDS, unlisted paths dropped."""
    return await attach_policy(db, kyc_queue)
