"""The claim-mapping rules: claim sets to grants, the explanation, and rule files refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from server.domain.identity.rules import (
    GROUPS_OVERAGE,
    NO_GRANT,
    RuleFileError,
    RuleSet,
    describe_grant,
)
from server.domain.model import Grant, Role

RULES = """
[[rule]]
name = "kyc reviewers"
claim = "groups"
contains = "kyc-reviewers"
role = "reviewer"
queues = ["kyc*"]

[[rule]]
name = "fraud reviewers (keycloak)"
claim = "realm_access.roles"
contains = "fraud-reviewer"
role = "reviewer"
queues = ["fraud", "kyc*"]

[[rule]]
name = "approvers (entra app role)"
claim = "roles"
contains = "Casework.Approver"
role = "approver"
queues = ["kyc-exceptions"]

[[rule]]
name = "team leads"
claim = "groups"
regex = "team-lead-[a-z]+"
role = "manager"

[[rule]]
name = "staff (google)"
claim = "email_verified == `true` && hd"
equals = "example.com"
role = "manager"
queues = ["payouts"]

[[rule]]
name = "integrations"
claim = "azp"
equals = "ingest-service"
role = "integration"
queues = ["kyc"]
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> RuleSet:
    path = tmp_path_factory.mktemp("rules") / "rules.toml"
    path.write_text(RULES)
    return RuleSet.load(path)


KYC = Grant(Role.REVIEWER, ("kyc*",), ("kyc reviewers",))

# claims -> the grants, in order (the first is the default active role).
CASES: list[tuple[str, dict[str, Any], tuple[Grant, ...]]] = [
    ("contains: a group in the list", {"groups": ["staff", "kyc-reviewers"]}, (KYC,)),
    ("contains: one group sent as a bare string", {"groups": "kyc-reviewers"}, (KYC,)),
    ("contains is not a substring test", {"groups": ["kyc-reviewers-retired"]}, ()),
    ("contains is case-sensitive", {"groups": ["KYC-Reviewers"]}, ()),
    (
        "a nested claim path (Keycloak realm roles)",
        {"realm_access": {"roles": ["offline_access", "fraud-reviewer"]}},
        (Grant(Role.REVIEWER, ("fraud", "kyc*"), ("fraud reviewers (keycloak)",)),),
    ),
    (
        "Entra ID app roles in `roles`",
        {"roles": ["Casework.Approver"]},
        (Grant(Role.APPROVER, ("kyc-exceptions",), ("approvers (entra app role)",)),),
    ),
    (
        "regex: full match on a list item",
        {"groups": ["team-lead-kyc"]},
        (Grant(Role.MANAGER, (), ("team leads",)),),
    ),
    ("regex: a partial match is no match", {"groups": ["team-lead-kyc-2"]}, ()),
    (
        "equals through an expression: Google's hosted domain, e-mail verified",
        {"hd": "example.com", "email_verified": True},
        (Grant(Role.MANAGER, ("payouts",), ("staff (google)",)),),
    ),
    ("an unverified e-mail is not enough", {"hd": "example.com", "email_verified": False}, ()),
    ("no hosted domain (a gmail.com account)", {"email_verified": True}, ()),
    (
        "a client-credentials token maps like a person",
        {"azp": "ingest-service"},
        (Grant(Role.INTEGRATION, ("kyc",), ("integrations",)),),
    ),
    (
        "grants of one role merge, the first rule's role first",
        {
            "groups": ["kyc-reviewers", "team-lead-ops"],
            "realm_access": {"roles": ["fraud-reviewer"]},
            "roles": ["Casework.Approver"],
        },
        (
            Grant(
                Role.REVIEWER, ("kyc*", "fraud"), ("kyc reviewers", "fraud reviewers (keycloak)")
            ),
            Grant(Role.APPROVER, ("kyc-exceptions",), ("approvers (entra app role)",)),
            Grant(Role.MANAGER, (), ("team leads",)),
        ),
    ),
    (
        "a manager grant for every queue absorbs one for some queues",
        {"groups": ["team-lead-ops"], "hd": "example.com", "email_verified": True},
        (Grant(Role.MANAGER, (), ("team leads", "staff (google)")),),
    ),
    ("deny by default: nothing matches", {"sub": "someone", "groups": ["staff"]}, ()),
    ("deny by default: no claims at all", {}, ()),
    ("a claim of the wrong shape is no match", {"realm_access": "fraud-reviewer"}, ()),
]


@pytest.mark.parametrize(
    ("claims", "grants"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_claims_map_to_grants(
    rules: RuleSet, claims: dict[str, Any], grants: tuple[Grant, ...]
) -> None:
    assert rules.grants_for(claims) == grants


def test_a_removed_group_removes_access_when_the_claims_are_evaluated_again(
    rules: RuleSet,
) -> None:
    before = {"sub": "u1", "groups": ["kyc-reviewers", "team-lead-ops"]}
    after = {"sub": "u1", "groups": ["team-lead-ops"]}

    assert [grant.role for grant in rules.grants_for(before)] == [Role.REVIEWER, Role.MANAGER]
    assert rules.grants_for(after) == (Grant(Role.MANAGER, (), ("team leads",)),)
    assert rules.grants_for({"sub": "u1", "groups": []}) == ()


def test_entra_group_overage_fails_closed(rules: RuleSet) -> None:
    # The app role alone would grant; with the groups left out nothing is granted at all.
    claims = {
        "roles": ["Casework.Approver"],
        "_claim_names": {"groups": "src1"},
        "_claim_sources": {"src1": {"endpoint": "https://graph.microsoft.com/v1.0/..."}},
    }

    explanation = rules.explain(claims)

    assert explanation.grants == ()
    assert explanation.refusal == GROUPS_OVERAGE
    assert "more than 200" in GROUPS_OVERAGE
    assert "group filtering" in GROUPS_OVERAGE
    assert "app roles" in GROUPS_OVERAGE
    assert rules.grants_for({"hasgroups": True, "roles": ["Casework.Approver"]}) == ()


def test_overage_does_not_matter_when_no_rule_reads_groups() -> None:
    rules = RuleSet.from_document(
        {"rule": [{"name": "a", "claim": "roles", "contains": "A", "role": "admin"}]}
    )

    assert rules.grants_for({"roles": ["A"], "_claim_names": {"groups": "src1"}}) == (
        Grant(Role.ADMIN, (), ("a",)),
    )


def test_overage_is_not_claimed_when_the_groups_are_there(rules: RuleSet) -> None:
    claims = {"groups": ["kyc-reviewers"], "_claim_names": {"groups": "src1"}}

    assert rules.grants_for(claims) == (KYC,)


def test_the_explanation_says_per_rule_what_was_seen_and_why(rules: RuleSet) -> None:
    explanation = rules.explain({"groups": ["kyc-reviewers", "staff"], "hd": "other.org"})
    by_rule = {outcome.rule: outcome for outcome in explanation.outcomes}

    assert [outcome.rule for outcome in explanation.outcomes] == [
        "kyc reviewers",
        "fraud reviewers (keycloak)",
        "approvers (entra app role)",
        "team leads",
        "staff (google)",
        "integrations",
    ]
    kyc = by_rule["kyc reviewers"]
    assert (kyc.matched, kyc.present, kyc.seen) == (True, True, ["kyc-reviewers", "staff"])
    assert kyc.reason == '`groups` contains "kyc-reviewers"'
    assert kyc.grant == KYC
    keycloak = by_rule["fraud reviewers (keycloak)"]
    assert (keycloak.matched, keycloak.present, keycloak.seen) == (False, False, None)
    assert keycloak.reason == "the claim `realm_access.roles` is absent"
    leads = by_rule["team leads"]
    assert not leads.matched
    assert leads.reason == "no string in `groups` matches /team-lead-[a-z]+/ in full"
    assert explanation.grants == (KYC,)
    assert explanation.refusal is None


def test_a_refusal_says_nothing_was_granted(rules: RuleSet) -> None:
    explanation = rules.explain({"groups": ["staff"]})

    assert explanation.grants == ()
    assert explanation.refusal == NO_GRANT == "no rule grants anything to this identity"
    assert all(not outcome.matched for outcome in explanation.outcomes)


def test_the_json_explanation_round_trips_the_grants(rules: RuleSet) -> None:
    document = rules.explain({"groups": "kyc-reviewers"}).to_json()

    assert document["grants"] == [
        {"role": "reviewer", "queues": ["kyc*"], "rules": ["kyc reviewers"]}
    ]
    assert document["rules"][0]["match"] == {"contains": "kyc-reviewers"}
    assert document["rules"][0]["reason"].endswith("(a single value, not a list)")
    assert document["refusal"] is None


def test_equals_holds_types_apart() -> None:
    rules = RuleSet.from_document(
        {
            "rule": [
                {"name": "flag", "claim": "flag", "equals": True, "role": "admin"},
                {"name": "level", "claim": "level", "equals": 1, "role": "manager"},
            ]
        }
    )

    assert rules.grants_for({"flag": 1, "level": True}) == ()
    assert [g.role for g in rules.grants_for({"flag": True, "level": 1})] == [
        Role.ADMIN,
        Role.MANAGER,
    ]


def test_yaml_and_toml_files_give_the_same_rules(tmp_path: Path) -> None:
    toml = tmp_path / "rules.toml"
    toml.write_text(RULES)
    yaml_file = tmp_path / "rules.yml"
    yaml_file.write_text(
        """
rule:
  - name: kyc reviewers
    claim: groups
    contains: kyc-reviewers
    role: reviewer
    queues: ["kyc*"]
"""
    )
    claims = {"groups": ["kyc-reviewers"]}

    assert RuleSet.load(yaml_file).grants_for(claims) == RuleSet.load(toml).grants_for(claims)


def test_describe_grant() -> None:
    assert describe_grant(Grant(Role.REVIEWER, ("kyc*", "fraud"), ("kyc reviewers",))) == (
        "reviewer in kyc*, fraud (rules: kyc reviewers)"
    )
    assert describe_grant(Grant(Role.MANAGER, (), ("a", "b"))) == (
        "manager in every queue (rules: a, b)"
    )


# --- rule files refused ------------------------------------------------------------------

GOOD = 'name = "r"\nclaim = "groups"\ncontains = "g"\nrole = "admin"\n'

REFUSED: list[tuple[str, str, str]] = [
    ("unknown key", GOOD + 'queue = ["kyc"]\n', 'rule 1 ("r"): unknown key(s) `queue`'),
    (
        "two match keys",
        GOOD + 'equals = "g"\n',
        'rule 1 ("r"): give exactly one of `equals`, `contains`, `regex`; '
        "it has `equals`, `contains`",
    ),
    (
        "no match key",
        'name = "r"\nclaim = "groups"\nrole = "admin"\n',
        "give exactly one of `equals`, `contains`, `regex`; it has none",
    ),
    (
        "bad regex",
        'name = "r"\nclaim = "groups"\nregex = "kyc-("\nrole = "admin"\n',
        'rule 1 ("r"): `regex` "kyc-(" does not compile: missing ), unterminated subpattern',
    ),
    (
        "bad JMESPath",
        'name = "r"\nclaim = "realm_access..roles"\ncontains = "g"\nrole = "admin"\n',
        'rule 1 ("r"): `claim` is not a JMESPath expression:',
    ),
    (
        "unknown role",
        'name = "r"\nclaim = "groups"\ncontains = "g"\nrole = "boss"\n',
        'rule 1 ("r"): unknown role "boss"; one of reviewer, approver, admin, manager, integration',
    ),
    (
        "reviewer without queues",
        'name = "r"\nclaim = "groups"\ncontains = "g"\nrole = "reviewer"\n',
        'rule 1 ("r"): a reviewer grant must name its queues',
    ),
    (
        "reviewer with an empty list of queues",
        'name = "r"\nclaim = "groups"\ncontains = "g"\nrole = "reviewer"\nqueues = []\n',
        'rule 1 ("r"): a reviewer grant must name its queues',
    ),
    (
        "a queue pattern no queue could match",
        GOOD + 'queues = ["KYC*"]\n',
        'rule 1 ("r"): "KYC*" is not a queue name or pattern',
    ),
    (
        "no name",
        'claim = "groups"\ncontains = "g"\nrole = "admin"\n',
        "rule 1: every rule needs a `name`",
    ),
    (
        "no claim",
        'name = "r"\ncontains = "g"\nrole = "admin"\n',
        'rule 1 ("r"): `claim` (a JMESPath expression, e.g. "groups") is missing',
    ),
    (
        "a table as the match value",
        'name = "r"\nclaim = "groups"\ncontains = {a = 1}\nrole = "admin"\n',
        'rule 1 ("r"): `contains` takes one string, number or boolean',
    ),
]


@pytest.mark.parametrize(("body", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_bad_rule_is_refused_with_what_to_fix(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text("[[rule]]\n" + body)

    with pytest.raises(RuleFileError) as refused:
        RuleSet.load(path)

    assert str(refused.value).startswith(f"{path}: ")
    assert message in str(refused.value)


def test_the_rule_number_counts_from_one_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(f"[[rule]]\n{GOOD}\n[[rule]]\n{GOOD.replace('admin', 'root')}")

    with pytest.raises(RuleFileError, match=r'rule 2 \("r"\): unknown role "root"'):
        RuleSet.load(path)


def test_two_rules_of_one_name_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(f"[[rule]]\n{GOOD}\n[[rule]]\n{GOOD}")

    with pytest.raises(RuleFileError, match=r'rule 2 \("r"\): the name is used twice'):
        RuleSet.load(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("rules.json", "{}", "a rule file is TOML (.toml) or YAML (.yaml, .yml)"),
        ("rules.toml", "[[rule]\n", "not valid TOML"),
        ("rules.yaml", "rule: [\n", "not valid YAML"),
        ("rules.toml", "", "no rules"),
        ("rules.yaml", "- name: r\n", "expected a table with a list `rule` of rules"),
        (
            "rules.toml",
            f"[settings]\nx = 1\n[[rule]]\n{GOOD}",
            "unknown top-level key(s) `settings`",
        ),
    ],
)
def test_an_unusable_file_is_refused(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)

    with pytest.raises(RuleFileError, match=re.escape(message)):
        RuleSet.load(path)


def test_a_missing_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match="cannot read the rule file"):
        RuleSet.load(tmp_path / "absent.toml")
