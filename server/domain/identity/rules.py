"""The claim-mapping rules: which role, in which queues, the provider's claims give a person.

A rule file (TOML or YAML, `CASEWORK_AUTH_RULES`) is a list of rules; each reads one claim
with a JMESPath expression, tests it with exactly one of `equals`, `contains` or `regex`, and
grants a role and queue patterns when it matches. Nothing matches: nothing is granted.

The tests, on the value the expression finds (absent or null never matches):
- `equals`: the value is exactly this scalar (`true` is not `1`).
- `contains`: a list holds this scalar among its items; a scalar value is held to equality
  (providers send a one-group list as a bare string). Never a substring test: `kyc` must not
  match a group named `kyc-reviewers-retired`.
- `regex`: the value, or any string item of a list, matches in full (`fullmatch`).

The server at each login or token refresh and `casework auth explain` call the same code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jmespath.exceptions

from server.domain.identity.rule_file import (
    MatchKind,
    Rule,
    RuleFileError,
    Scalar,
    Verdict,
    parse_rules,
    read_rules,
)
from server.domain.model import Grant, Role

__all__ = [
    "Explanation",
    "RuleFileError",
    "RuleOutcome",
    "RuleSet",
    "describe_grant",
    "merge_grants",
]

WILDCARDS = frozenset("*?[")
# Entra ID leaves the groups out of a token past this many, naming a source instead.
ENTRA_GROUP_LIMIT = 200

NO_GRANT = "no rule grants anything to this identity"
GROUPS_OVERAGE = (
    "the identity provider left the groups out of the token (the person is in more than "
    f"{ENTRA_GROUP_LIMIT} groups: Entra ID's group overage), so the rules that read `groups` "
    "cannot be applied and nothing is granted. In the provider, emit only the groups "
    "assigned to the application (group filtering), or map access with app roles (the "
    "`roles` claim) instead of groups."
)
# --- explanations ------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleOutcome:
    """What one rule made of the claims."""

    rule: str
    claim: str
    match: MatchKind
    value: Scalar
    present: bool
    seen: Any  # the claim's value as the expression found it (None: absent)
    matched: bool
    reason: str
    grant: Grant  # what the rule gives when it matches

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "claim": self.claim,
            "match": {self.match.value: self.value},
            "present": self.present,
            "seen": self.seen,
            "matched": self.matched,
            "reason": self.reason,
            "grant": grant_to_json(self.grant),
        }


@dataclass(frozen=True)
class Explanation:
    """Every rule's outcome, the grants that result, and why access is refused if it is."""

    outcomes: tuple[RuleOutcome, ...]
    grants: tuple[Grant, ...]
    refusal: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": [outcome.to_json() for outcome in self.outcomes],
            "grants": [grant_to_json(grant) for grant in self.grants],
            "refusal": self.refusal,
        }


def grant_to_json(grant: Grant) -> dict[str, Any]:
    return {"role": grant.role.value, "queues": list(grant.queues), "rules": list(grant.rules)}


def describe_grant(grant: Grant, *, with_rules: bool = True) -> str:
    """`reviewer in kyc*, fraud (rules: kyc reviewers)`."""
    scope = ", ".join(grant.queues) if grant.queues else "every queue"
    rules = f" (rules: {', '.join(grant.rules)})" if with_rules else ""
    return f"{grant.role.value} in {scope}{rules}"


# --- the rule set ------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    source: str = "(rules)"

    @classmethod
    def load(cls, path: Path | str) -> RuleSet:
        """Read a `.toml`, `.yaml` or `.yml` rule file; RuleFileError says what is wrong."""
        path = Path(path)
        return cls(read_rules(path), str(path))

    @classmethod
    def from_document(cls, document: Any, *, source: str = "(rules)") -> RuleSet:
        return cls(parse_rules(document, source), source)

    def grants_for(self, claims: Mapping[str, Any]) -> tuple[Grant, ...]:
        return self.explain(claims).grants

    def explain(self, claims: Mapping[str, Any]) -> Explanation:
        outcomes = tuple(_outcome(rule, claims) for rule in self.rules)
        if self._groups_left_out(claims):
            return Explanation(outcomes, (), GROUPS_OVERAGE)
        grants = merge_grants(outcome.grant for outcome in outcomes if outcome.matched)
        return Explanation(outcomes, grants, None if grants else NO_GRANT)

    def _groups_left_out(self, claims: Mapping[str, Any]) -> bool:
        return groups_overage(claims) and any(rule.reads_claim("groups") for rule in self.rules)


def _outcome(rule: Rule, claims: Mapping[str, Any]) -> RuleOutcome:
    try:
        seen = rule.read(claims)
    except jmespath.exceptions.JMESPathError as error:
        # A function given the wrong type (`contains(groups, ...)` with no groups): no match.
        seen, verdict = None, Verdict(False, f"the expression failed on these claims: {error}")
    else:
        verdict = rule.test(seen)
    return RuleOutcome(
        rule=rule.name,
        claim=rule.claim,
        match=rule.kind,
        value=rule.value,
        present=seen is not None,
        seen=seen,
        matched=verdict.matched,
        reason=verdict.reason,
        grant=rule.grant,
    )


def groups_overage(claims: Mapping[str, Any]) -> bool:
    """Entra ID's sign that the groups were left out: `_claim_names` names `groups` (or the
    implicit flow's `hasgroups: true`), and there is no `groups` claim."""
    if "groups" in claims:
        return False
    names = claims.get("_claim_names")
    return (isinstance(names, Mapping) and "groups" in names) or claims.get("hasgroups") is True


def merge_grants(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """One grant per role, in the order each role was first granted. Queue patterns are
    unioned in first-seen order and rule names kept in order; a non-reviewer grant without
    queues covers every queue, so it absorbs the patterns of the others of its role."""
    by_role: dict[Role, list[Grant]] = {}
    for grant in grants:
        by_role.setdefault(grant.role, []).append(grant)
    return tuple(_merged(role, same) for role, same in by_role.items())


def _merged(role: Role, grants: Sequence[Grant]) -> Grant:
    rules = tuple(dict.fromkeys(name for grant in grants for name in grant.rules))
    if role is not Role.REVIEWER and any(not grant.queues for grant in grants):
        return Grant(role, (), rules)
    queues = tuple(dict.fromkeys(queue for grant in grants for queue in grant.queues))
    return Grant(role, queues, rules)
