"""Recognisable personal values, and a KYC payload carrying them (the policy is
tests/privacy/conftest.py's KYC_FIELDS): anything that finds one of these strings somewhere
found personal data where it must not be. The same values as tests/privacy/test_intake.py,
here so that any test module may import them (a test module imports no other)."""

from __future__ import annotations

from typing import Any

CANARY_NAME = "Zebediah Canarywood"
CANARY_PASSPORT = "P-CANARY-440192"
CANARY_BIRTH_DATE = "1961-04-12"
# What a producer sends by mistake under `credentials.password` (a secret: always refused).
CANARY_SECRET = "hunter2-CANARY-SECRET-7731"
# What a reviewer writes about the applicant in a note.
CANARY_NOTE = "CANARY-NOTE: Zebediah's utility bill is in a maiden name"

PERSONAL_CANARIES = (CANARY_NAME, CANARY_PASSPORT, CANARY_BIRTH_DATE, CANARY_NOTE)
ALL_CANARIES = (*PERSONAL_CANARIES, CANARY_SECRET)


def applicant(password: str | None = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "applicant": {
            "name": CANARY_NAME,
            "date_of_birth": CANARY_BIRTH_DATE,
            "passport_number": CANARY_PASSPORT,
        },
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
        **extra,
    }
    if password is not None:
        payload["credentials"] = {"password": password}
    return payload
