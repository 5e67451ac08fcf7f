"""A rule file, read and checked: each rule's claim expression and test compiled once, every
problem refused with the file, the rule and what to change (RuleFileError)."""

from __future__ import annotations

import enum
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jmespath
import jmespath.exceptions
import yaml

from server.domain.model import Grant, Role

RULE_KEYS = frozenset({"name", "claim", "equals", "contains", "regex", "role", "queues"})
MATCH_KEYS = ("equals", "contains", "regex")
# Queue names are lower-case letters, digits, `_`, `.` and `-`; patterns add fnmatch's
# `*`, `?` and `[...]`. An upper-case pattern could never match, so it is refused.
QUEUE_PATTERN = re.compile(r"^[a-z0-9_.\-*?\[\]!]{1,63}$")
SEEN_LIMIT = 120

Scalar = str | int | float | bool


class RuleFileError(ValueError):
    """A rule file that cannot be used, with what to fix: the file, the rule, the problem."""


# --- a rule ---------------------------------------------------------------------------


class MatchKind(enum.Enum):
    EQUALS = "equals"
    CONTAINS = "contains"
    REGEX = "regex"


@dataclass(frozen=True)
class Verdict:
    """One rule's test on one claim value: whether it matched, and why in words."""

    matched: bool
    reason: str


@dataclass(frozen=True)
class Rule:
    name: str
    claim: str
    kind: MatchKind
    value: Scalar
    grant: Grant
    expression: Any  # jmespath's ParsedResult (jmespath ships no types)
    pattern: re.Pattern[str] | None = None

    def read(self, claims: Mapping[str, Any]) -> Any:
        """The claim's value; None when absent or null."""
        return self.expression.search(dict(claims))

    def test(self, seen: Any) -> Verdict:
        if seen is None:
            return Verdict(False, f"the claim `{self.claim}` is absent")
        if self.kind is MatchKind.EQUALS:
            return self._test_equals(seen)
        if self.kind is MatchKind.CONTAINS:
            return self._test_contains(seen)
        return self._test_regex(seen)

    def reads_claim(self, name: str) -> bool:
        return name in _fields_read(self.expression.parsed)

    def _test_equals(self, seen: Any) -> Verdict:
        if _same(seen, self.value):
            return Verdict(True, f"`{self.claim}` is {shown(self.value)}")
        return Verdict(False, f"`{self.claim}` is {shown(seen)}, not {shown(self.value)}")

    def _test_contains(self, seen: Any) -> Verdict:
        if not isinstance(seen, list):
            verdict = self._test_equals(seen)
            return Verdict(verdict.matched, verdict.reason + " (a single value, not a list)")
        if any(_same(item, self.value) for item in seen):
            return Verdict(True, f"`{self.claim}` contains {shown(self.value)}")
        return Verdict(
            False,
            f"`{self.claim}` ({_count(len(seen))}) does not contain {shown(self.value)}",
        )

    def _test_regex(self, seen: Any) -> Verdict:
        assert self.pattern is not None
        for text in _strings_in(seen):
            if self.pattern.fullmatch(text):
                return Verdict(True, f"`{self.claim}` has {shown(text)}, matching /{self.value}/")
        return Verdict(False, f"no string in `{self.claim}` matches /{self.value}/ in full")


def _same(seen: Any, expected: Scalar) -> bool:
    # Python holds True == 1; a claim test must not.
    if isinstance(seen, bool) or isinstance(expected, bool):
        return isinstance(seen, bool) and isinstance(expected, bool) and seen is expected
    return bool(seen == expected)


def _strings_in(seen: Any) -> Iterator[str]:
    items = seen if isinstance(seen, list) else [seen]
    return (item for item in items if isinstance(item, str))


def _fields_read(node: Mapping[str, Any]) -> Iterator[str]:
    if node.get("type") == "field":
        yield str(node["value"])
    for child in node.get("children", ()):
        if isinstance(child, Mapping):
            yield from _fields_read(child)


def shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SEEN_LIMIT else text[: SEEN_LIMIT - 1] + "…"


def _count(items: int) -> str:
    return "1 value" if items == 1 else f"{items} values"


# --- reading a rule file -----------------------------------------------------------------


def read_rules(path: Path) -> tuple[Rule, ...]:
    """The rules of a `.toml`, `.yaml` or `.yml` file, in file order."""
    return parse_rules(_read_document(path), str(path))


def _read_document(path: Path) -> Any:
    parse = _parser_for(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RuleFileError(f"{path}: cannot read the rule file: {error}") from error
    try:
        return parse(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        raise RuleFileError(f"{path}: not valid {path.suffix[1:].upper()}: {error}") from error


def _parser_for(path: Path) -> Callable[[str], Any]:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return tomllib.loads
    if suffix in (".yaml", ".yml"):
        return _yaml
    raise RuleFileError(
        f"{path}: a rule file is TOML (.toml) or YAML (.yaml, .yml), told apart by its "
        f"extension; {path.suffix or 'no extension'} is neither"
    )


def _yaml(text: str) -> Any:
    # safe_load builds plain data only (no Python objects from tags).
    return yaml.safe_load(text)


def parse_rules(document: Any, source: str) -> tuple[Rule, ...]:
    if not isinstance(document, Mapping):
        raise RuleFileError(f"{source}: expected a table with a list `rule` of rules")
    unknown = sorted(set(document) - {"rule"})
    if unknown:
        raise RuleFileError(
            f"{source}: unknown top-level key(s) {_names(unknown)}; a rule file holds only `rule`"
        )
    entries = document.get("rule")
    if not isinstance(entries, list) or not entries:
        raise RuleFileError(
            f"{source}: no rules (a list `rule`, `[[rule]]` tables in TOML); "
            "with no rules nobody gets access"
        )
    rules: list[Rule] = []
    for index, entry in enumerate(entries, start=1):
        rule = _parse_rule(entry, _Where(source, index))
        if any(earlier.name == rule.name for earlier in rules):
            raise RuleFileError(f"{_Where(source, index, rule.name)}: the name is used twice")
        rules.append(rule)
    return tuple(rules)


@dataclass(frozen=True)
class _Where:
    """Where a problem is, as a message starts: `rules.toml: rule 2 ("kyc reviewers")`."""

    source: str
    index: int
    name: str | None = None

    def __str__(self) -> str:
        named = f" ({json.dumps(self.name, ensure_ascii=False)})" if self.name else ""
        return f"{self.source}: rule {self.index}{named}"


def _parse_rule(entry: Any, where: _Where) -> Rule:
    if not isinstance(entry, Mapping):
        raise RuleFileError(f"{where}: a rule is a table of keys, not {shown(entry)}")
    where = _Where(where.source, where.index, _name(entry, where))
    unknown = sorted(set(entry) - RULE_KEYS)
    if unknown:
        raise RuleFileError(
            f"{where}: unknown key(s) {_names(unknown)}; a rule has {_names(sorted(RULE_KEYS))}"
        )
    kind, value = _match(entry, where)
    claim, expression = _claim(entry, where)
    grant = _grant(entry, where)
    pattern = _regex(value, where) if kind is MatchKind.REGEX else None
    return Rule(where.name or "", claim, kind, value, grant, expression, pattern)


def _name(entry: Mapping[str, Any], where: _Where) -> str:
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RuleFileError(f"{where}: every rule needs a `name` (a non-empty string)")
    return name.strip()


def _match(entry: Mapping[str, Any], where: _Where) -> tuple[MatchKind, Scalar]:
    given = [key for key in MATCH_KEYS if key in entry]
    if len(given) != 1:
        found = f"it has {_names(given)}" if given else "it has none"
        raise RuleFileError(f"{where}: give exactly one of `equals`, `contains`, `regex`; {found}")
    kind = MatchKind(given[0])
    value = entry[kind.value]
    if kind is MatchKind.REGEX and not isinstance(value, str):
        raise RuleFileError(f"{where}: `regex` is a string, not {shown(value)}")
    if not isinstance(value, str | int | float | bool):
        raise RuleFileError(
            f"{where}: `{kind.value}` takes one string, number or boolean, not {shown(value)}"
        )
    return kind, value


def _claim(entry: Mapping[str, Any], where: _Where) -> tuple[str, Any]:
    claim = entry.get("claim")
    if not isinstance(claim, str) or not claim.strip():
        raise RuleFileError(f'{where}: `claim` (a JMESPath expression, e.g. "groups") is missing')
    try:
        return claim, jmespath.compile(claim)
    except jmespath.exceptions.JMESPathError as error:
        raise RuleFileError(f"{where}: `claim` is not a JMESPath expression: {error}") from error


def _regex(value: Scalar, where: _Where) -> re.Pattern[str]:
    try:
        return re.compile(str(value))
    except re.error as error:
        raise RuleFileError(f"{where}: `regex` {shown(value)} does not compile: {error}") from error


def _grant(entry: Mapping[str, Any], where: _Where) -> Grant:
    role = _role(entry.get("role"), where)
    queues = _queues(entry.get("queues"), where)
    if role is Role.REVIEWER and not queues:
        raise RuleFileError(
            f'{where}: a reviewer grant must name its queues, e.g. queues = ["kyc*"]'
        )
    return Grant(role, queues, (where.name or "",))


def _role(value: Any, where: _Where) -> Role:
    roles = ", ".join(role.value for role in Role)
    if value is None:
        raise RuleFileError(f"{where}: `role` is missing (one of {roles})")
    try:
        return Role(value)
    except ValueError:
        raise RuleFileError(f"{where}: unknown role {shown(value)}; one of {roles}") from None


def _queues(value: Any, where: _Where) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RuleFileError(f"{where}: `queues` is a list of queue names or patterns")
    for pattern in value:
        if not QUEUE_PATTERN.fullmatch(pattern):
            raise RuleFileError(
                f"{where}: {shown(pattern)} is not a queue name or pattern (a-z, 0-9, "
                "'_', '.', '-' and the wildcards * ? [...]; at most 63 characters)"
            )
    return tuple(dict.fromkeys(value))


def _names(keys: Iterable[str]) -> str:
    return ", ".join(f"`{key}`" for key in keys)
