"""docs/authentication.md: its rule files load, its examples give what the text says, and the
`casework auth explain` run it shows is what the command prints."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from server.cli import _parser
from server.cli.auth import format_explanation
from server.config import REPO_ROOT
from server.domain.identity.rules import RuleFileError, RuleSet
from server.domain.model import Grant, Role
from tests.docs.helpers import code_blocks, section

AUTHENTICATION = REPO_ROOT / "docs" / "authentication.md"
MAPPING = "## Mapping claims to roles and queues"


def subsection(title: str) -> str:
    # The ### sections of the mapping section, read the way helpers.section reads ## ones.
    text = section(AUTHENTICATION, MAPPING)
    start = text.index(f"\n### {title}\n")
    following = text.find("\n### ", start + 1)
    return text[start : following if following != -1 else len(text)]


def rule_files() -> list[tuple[str, Any]]:
    text = section(AUTHENTICATION, MAPPING)
    return [("toml", tomllib.loads(body)) for body in code_blocks(text, "toml")] + [
        ("yaml", yaml.safe_load(body)) for body in code_blocks(text, "yaml")
    ]


def test_every_rule_file_in_the_section_loads() -> None:
    files = rule_files()

    assert len(files) == 5
    for _, document in files:
        assert RuleSet.from_document(document).rules


def test_the_several_grants_example_gives_what_the_text_says() -> None:
    (example,) = code_blocks(subsection("Several grants, and the active role"), "toml")
    rules = RuleSet.from_document(tomllib.loads(example))

    grants = rules.grants_for({"groups": ["kyc-reviewers", "fraud-reviewers", "kyc-approvers"]})

    assert grants == (
        Grant(Role.REVIEWER, ("kyc*", "fraud"), ("kyc reviewers", "fraud reviewers")),
        Grant(Role.APPROVER, ("kyc-exceptions",), ("exception approvers",)),
    )


def test_the_google_rule_needs_the_domain_and_a_verified_address() -> None:
    (example,) = code_blocks(subsection("Google"), "toml")
    rules = RuleSet.from_document(tomllib.loads(example))

    assert rules.grants_for({"hd": "example.com", "email_verified": True})
    assert not rules.grants_for({"hd": "example.com", "email_verified": False})
    assert not rules.grants_for({"email": "someone@gmail.com", "email_verified": True})


def test_the_keycloak_client_role_path_reads_a_hyphenated_client() -> None:
    (example,) = code_blocks(subsection("Keycloak"), "toml")
    rules = RuleSet.from_document(tomllib.loads(example))
    claims = {"resource_access": {"casework-api": {"roles": ["approver"]}}}

    assert rules.grants_for(claims) == (Grant(Role.APPROVER, (), ("approvers (client role)",)),)
    assert rules.grants_for({"groups": ["/teams/payments/emea"]})[0].queues == (
        "payouts",
        "refunds",
    )


def test_the_error_shown_is_the_one_a_reviewer_without_queues_gets(tmp_path: Path) -> None:
    (shown,) = code_blocks(subsection("The rule file"), "text")
    path = tmp_path / "rules.toml"
    path.write_text(
        '[[rule]]\nname = "kyc"\nclaim = "groups"\ncontains = "kyc"\nrole = "reviewer"\n'
        'queues = ["kyc"]\n\n[[rule]]\nname = "fraud reviewers"\nclaim = "groups"\n'
        'contains = "fraud"\nrole = "reviewer"\n'
    )

    with pytest.raises(RuleFileError) as refused:
        RuleSet.load(path)

    assert str(refused.value) == shown.strip().replace("rules.toml", str(path), 1)


def test_the_explain_run_shown_is_what_the_command_prints() -> None:
    text = subsection("Testing a change with `casework auth explain`")
    (command,) = code_blocks(text, "sh")
    (printed,) = code_blocks(text, "text")
    (rules_file,) = code_blocks(subsection("Several grants, and the active role"), "toml")
    args = _parser().parse_args(shlex.split(command)[1:])
    rules = RuleSet.from_document(tomllib.loads(rules_file), source=str(args.rules))
    # alice, as the shown run implies: in the KYC reviewers and approvers groups.
    claims = {"sub": "alice", "groups": ["kyc-reviewers", "kyc-approvers"]}

    explained = format_explanation(
        rules.explain(claims), rules=rules.source, claims=f"claims read from {args.claims}"
    )

    assert explained == printed.rstrip("\n")
