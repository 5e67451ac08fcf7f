"""`casework auth explain`, run as an admin runs it: a process of its own, no database."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from server.domain.identity.rules import RuleSet
from tests.api.live_server import Run, run_casework

RULES = """
[[rule]]
name = "kyc reviewers"
claim = "groups"
contains = "kyc-reviewers"
role = "reviewer"
queues = ["kyc*"]

[[rule]]
name = "fraud reviewers"
claim = "realm_access.roles"
contains = "fraud-reviewer"
role = "reviewer"
queues = ["fraud"]

[[rule]]
name = "approvers"
claim = "roles"
regex = "Casework\\\\.Approver(\\\\..+)?"
role = "approver"
"""

KYC_AND_APPROVER = {
    "sub": "00u1",
    "groups": ["kyc-reviewers", "staff"],
    "realm_access": {"roles": ["fraud-reviewer"]},
    "roles": ["Casework.Approver.EU"],
}


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return path


def claims_file(tmp_path: Path, claims: dict[str, Any]) -> Path:
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(claims))
    return path


async def explain(*args: str, stdin: bytes | None = None, **env: str) -> Run:
    environment = {key: value for key, value in os.environ.items() if key != "CASEWORK_AUTH_RULES"}
    # Unreachable: explaining must not need a database.
    environment["DATABASE_URL"] = "postgresql://postgres@127.0.0.1:1/casework"
    return await run_casework({**environment, **env}, "auth", "explain", *args, stdin=stdin)


async def test_the_rules_that_match_and_the_grants_are_printed(rules: Path, tmp_path: Path) -> None:
    claims = claims_file(tmp_path, KYC_AND_APPROVER)

    run = await explain("--rules", str(rules), "--claims", str(claims))

    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"rules: {rules}",
        f"claims read from {claims}",
        "",
        '  matched      kyc reviewers: `groups` contains "kyc-reviewers" -> reviewer in kyc*',
        '  matched      fraud reviewers: `realm_access.roles` contains "fraud-reviewer" '
        "-> reviewer in fraud",
        '  matched      approvers: `roles` has "Casework.Approver.EU", matching '
        "/Casework\\.Approver(\\..+)?/ -> approver in every queue",
        "",
        "grants:",
        "  reviewer in kyc*, fraud (rules: kyc reviewers, fraud reviewers)"
        "  (active unless the request asks for another role)",
        "  approver in every queue (rules: approvers)",
    ]
    assert run.stderr == ""


async def test_an_identity_no_rule_grants_is_denied_with_exit_status_1(
    rules: Path, tmp_path: Path
) -> None:
    claims = claims_file(tmp_path, {"sub": "00u2", "groups": ["kyc-reviewers-retired"]})

    run = await explain("--rules", str(rules), "--claims", str(claims))

    assert run.code == 1, run.stderr
    lines = run.stdout.splitlines()
    assert (
        '  not matched  kyc reviewers: `groups` (1 value) does not contain "kyc-reviewers"' in lines
    )
    assert "  not matched  fraud reviewers: the claim `realm_access.roles` is absent" in lines
    assert lines[-1] == "access denied: no rule grants anything to this identity"
    assert "grants:" not in lines


@pytest.mark.parametrize(
    "claims",
    [
        KYC_AND_APPROVER,
        {"sub": "00u2", "groups": ["staff"]},
        {"groups": "kyc-reviewers", "_claim_names": {"groups": "src1"}},
        {"_claim_names": {"groups": "src1"}, "roles": ["Casework.Approver"]},
    ],
    ids=["granted", "denied", "groups-as-a-string", "entra-overage"],
)
async def test_json_is_what_the_server_gets_from_the_same_rules(
    rules: Path, claims: dict[str, Any]
) -> None:
    run = await explain(
        "--rules", str(rules), "--claims", "-", "--json", stdin=json.dumps(claims).encode()
    )

    expected = RuleSet.load(rules).explain(claims)
    assert json.loads(run.stdout) == expected.to_json()
    assert run.code == (0 if expected.grants else 1), run.stderr


async def test_the_overage_refusal_says_what_the_admin_can_do(rules: Path, tmp_path: Path) -> None:
    claims = claims_file(
        tmp_path, {"_claim_names": {"groups": "src1"}, "roles": ["Casework.Approver"]}
    )

    run = await explain("--rules", str(rules), "--claims", str(claims))

    assert run.code == 1
    assert "access denied: the identity provider left the groups out" in run.stdout
    assert "group filtering" in run.stdout


async def test_a_token_is_read_without_checking_its_signature(rules: Path) -> None:
    key = RSAKey.generate_key(2048)
    token = jwt.encode(
        {"alg": "RS256", "typ": "at+jwt"}, {"sub": "00u3", "groups": ["kyc-reviewers"]}, key
    )

    run = await explain("--rules", str(rules), "--token", token)
    as_json = await explain("--rules", str(rules), "--token", token, "--json")

    assert run.code == 0, run.stderr
    assert run.stdout.splitlines()[1] == "claims read from the token, signature not checked"
    assert "  reviewer in kyc* (rules: kyc reviewers)" in run.stdout
    assert as_json.code == 0
    assert json.loads(as_json.stdout)["grants"] == [
        {"role": "reviewer", "queues": ["kyc*"], "rules": ["kyc reviewers"]}
    ]
    assert as_json.stderr == "casework: claims read from the token, signature not checked\n"


async def test_the_rule_file_defaults_to_casework_auth_rules(rules: Path, tmp_path: Path) -> None:
    claims = claims_file(tmp_path, KYC_AND_APPROVER)

    configured = await explain("--claims", str(claims), CASEWORK_AUTH_RULES=str(rules))
    unset = await explain("--claims", str(claims))

    assert configured.code == 0, configured.stderr
    assert f"rules: {rules}" in configured.stdout
    assert unset.code == 2
    assert unset.stderr == (
        "casework: error: no rule file: pass --rules FILE or set CASEWORK_AUTH_RULES\n"
    )


async def test_a_bad_rule_file_is_exit_status_2_with_its_message(tmp_path: Path) -> None:
    bad = tmp_path / "rules.toml"
    bad.write_text('[[rule]]\nname = "r"\nclaim = "groups"\ncontains = "g"\nrole = "boss"\n')
    claims = claims_file(tmp_path, KYC_AND_APPROVER)

    run = await explain("--rules", str(bad), "--claims", str(claims))

    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f'casework: error: {bad}: rule 1 ("r"): unknown role "boss"')
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (["--claims", "-"], "standard input: the claims are not JSON"),
        (["--token", "not-a-token"], "--token is not a signed JWT"),
    ],
)
async def test_unreadable_claims_are_exit_status_2(
    rules: Path, source: list[str], message: str
) -> None:
    run = await explain("--rules", str(rules), *source, stdin=b"{not json")

    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"casework: error: {message}")
    assert "Traceback" not in run.stderr
