"""What may go into an exception record: pure checks, no database."""

from __future__ import annotations

import pytest

from server.domain.exceptions.rules import (
    check_facts,
    check_references,
    check_steps,
    looks_like_credential,
)
from server.domain.failures import InvalidInput
from server.events.channels import parse_event


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "Password",
        "db_password",
        "passwd",
        "client_secret",
        "clientSecret",
        "sessionToken",
        "access_token",
        "api_key",
        "apiKey",
        "API-KEY",
        "x-api-key",
        "privateKey",
        "aws_access_key_id",
        "credentials",
        "Authorization",
        "cookie",
        "session_id",
        "bearer",
        "passphrase",
        "pwd",
        "cardPin",
        "otp",
        "X-Amz-Security-Token",
    ],
)
def test_credential_looking_keys_are_recognised(key: str) -> None:
    assert looks_like_credential(key)


@pytest.mark.parametrize(
    "key",
    [
        "legalName",
        "recordLegalName",
        "iban_last4",
        "company_id",
        "documentType",
        "amount",
        "companySecretary",
        "keyPerson",
        "spinOffDate",
        "shipping_address",
    ],
)
def test_plain_fact_keys_pass(key: str) -> None:
    assert not looks_like_credential(key)


def test_a_credential_key_is_refused_at_any_depth_and_named() -> None:
    facts = {"supplier": {"bank": [{"iban_last4": "1234"}, {"accessToken": "x"}]}}

    refused = check_facts(facts, "context")

    assert isinstance(refused, InvalidInput)
    assert refused.field == "context"
    assert "'supplier.bank[1].accessToken'" in refused.message


def test_facts_must_be_a_small_object() -> None:
    assert check_facts({"legalName": "Acme"}, "context") is None
    assert check_facts(None, "context") is None
    assert isinstance(check_facts(["not", "an", "object"], "context"), InvalidInput)
    big = check_facts({"document": "x" * 20_000}, "context")
    assert isinstance(big, InvalidInput)
    assert "store a reference" in big.message


@pytest.mark.parametrize(
    "reference",
    [
        "https://alice:hunter2@files.example.com/cert.pdf",
        "https://bucket.s3.amazonaws.com/cert.pdf?X-Amz-Signature=abc&X-Amz-Expires=600",
        "https://files.example.com/cert.pdf?token=abc",
        "https://files.example.com/cert.pdf?sig=abc",
        "https://files.example.com/cert.pdf?api_key=abc",
        "https://docs.example.com/certificate.pdf#access_token=abc123",
        "https://docs.example.com/certificate.pdf;jsessionid=abc123",
        "https://maps.example.com/api?key=AIzaSyabc",
        " docstore://padded ",
        "",
        "x" * 501,
    ],
)
def test_references_that_carry_credentials_or_are_malformed_are_refused(reference: str) -> None:
    refused = check_references([reference], "evidence", required=False)
    assert isinstance(refused, InvalidInput)
    assert refused.field == "evidence"


def test_stable_references_pass_and_evidence_may_be_required() -> None:
    good = ["docstore://suppliers/SUP-1/cert.pdf", "https://registry.example.com/c/123?page=2"]
    assert check_references(good, "evidence", required=True) is None
    assert isinstance(check_references([], "evidence", required=True), InvalidInput)
    assert check_references([], "evidence", required=False) is None
    assert isinstance(check_references(["r"] * 51, "evidence", required=False), InvalidInput)


def test_steps_are_named_once() -> None:
    assert check_steps(["collect", "verify"], "completedSteps") is None
    assert isinstance(check_steps(["collect", "collect"], "completedSteps"), InvalidInput)
    assert isinstance(check_steps([""], "completedSteps"), InvalidInput)


def test_an_exception_hint_reaches_its_workflows_and_every_queue_it_touched() -> None:
    event = parse_event(
        '{"k":"exception","q":"procurement-leads","qs":["supplier-ops","procurement-leads"],'
        '"ws":["supplier_onboarding"]}'
    )

    assert event is not None
    assert event.workflows == ("supplier_onboarding",)
    assert event.queues == ("procurement-leads", "supplier-ops")

    single = parse_event('{"k":"exception","q":"a","from":"b","w":"flow","x":"exc_1","i":7}')
    assert single is not None
    assert (single.workflows, single.queues, single.item_id) == (("flow",), ("a", "b"), 7)
