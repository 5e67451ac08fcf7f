"""The hint kinds the SQL writes and the ones Python reads are one list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from server.events.channels import DATABASE_KINDS, EventKind, parse_event

ROOT = Path(__file__).resolve().parents[2]
SQL_FILES = sorted([*ROOT.glob("db/queries/*.sql"), *ROOT.glob("db/migrations/*.sql")])

# A call, not the function's definition or its grants (`FUNCTION casework_hint(`).
_CALL = re.compile(r"(?<!FUNCTION )\bcasework_hint\(")
_COMMENT = re.compile(r"--[^\n]*")
# `kind => 'decided'` or `kind => CASE WHEN … THEN 'escalated' ELSE 'decided' END`; any
# other shape after `kind =>` is one this scan does not know.
_KIND = re.compile(r"\bkind\s*=>\s*")
_LITERAL = re.compile(r"'([a-z_]+)'")
_CASE = re.compile(r"CASE\b.*?\bEND\b", re.DOTALL)
_BRANCH = re.compile(r"\b(?:THEN|ELSE)\s+'([a-z_]+)'")


def call_arguments(text: str, opening: int) -> str:
    """What lies between the parenthesis at `opening` and the one that closes it."""
    depth = 0
    for index in range(opening, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : index]
    raise AssertionError(f"unclosed call at {text[opening - 20 : opening + 40]!r}")


def kinds_in(arguments: str) -> list[str]:
    key = _KIND.search(arguments)
    assert key, f"a casework_hint call without `kind =>`: {arguments[:80]!r}"
    rest = arguments[key.end() :]
    literal, case = _LITERAL.match(rest), _CASE.match(rest)
    if literal:
        return [literal.group(1)]
    if case:
        kinds = _BRANCH.findall(case.group())
        assert kinds, f"no kind in {rest[:60]!r}"
        return kinds
    raise AssertionError(f"cannot read the hint kind in {rest[:60]!r}")


def emitted_kinds(text: str, source: str, found: dict[str, set[str]]) -> int:
    """Adds each kind `text` passes as `casework_hint(kind => ...)`; returns the calls."""
    text = _COMMENT.sub("", text)
    calls = list(_CALL.finditer(text))
    for call in calls:
        for kind in kinds_in(call_arguments(text, call.end() - 1)):
            found.setdefault(kind, set()).add(source)
    return len(calls)


def project_kinds() -> dict[str, set[str]]:
    """Each kind the project's SQL writes, with the files that write it."""
    found: dict[str, set[str]] = {}
    for path in SQL_FILES:
        emitted_kinds(path.read_text(), path.name, found)
    return found


def test_every_kind_the_sql_writes_is_a_database_kind() -> None:
    emitted = project_kinds()
    unknown = {kind: files for kind, files in emitted.items() if kind not in DATABASE_KINDS}
    assert not unknown, f"add these to EventKind, or parse_event drops them: {unknown}"


def test_every_database_kind_is_written_by_some_sql() -> None:
    # Also proves the scan still finds the hints: a kind nobody writes is dead code.
    assert set(project_kinds()) == {kind.value for kind in DATABASE_KINDS}


def test_every_hint_goes_through_casework_hint() -> None:
    # A payload built by hand would escape both the scan above and the function's keys.
    by_hand = [
        path.name
        for path in ROOT.glob("db/queries/*.sql")
        if re.search(r"casework_notify\(|pg_notify\(", _COMMENT.sub("", path.read_text()))
    ]
    assert by_hand == []


def test_the_scan_reads_literals_and_case_expressions() -> None:
    found: dict[str, set[str]] = {}
    text = """
    -- casework_hint(kind => 'in_a_comment') is not a call
    CREATE FUNCTION casework_hint(kind text, queue text) RETURNS text;
    SELECT casework_hint(kind => 'claimed', queue => lower(:queue::text)),
           casework_hint(queue => q, kind => CASE WHEN x THEN 'escalated' ELSE 'decided' END);
    """

    assert emitted_kinds(text, "x.sql", found) == 2
    assert found == {"claimed": {"x.sql"}, "escalated": {"x.sql"}, "decided": {"x.sql"}}


@pytest.mark.parametrize(
    "call",
    [
        "SELECT casework_hint(queue => 'kyc')",
        "SELECT casework_hint(kind => :kind, queue => 'kyc')",
    ],
)
def test_a_kind_the_scan_cannot_read_fails_it(call: str) -> None:
    with pytest.raises(AssertionError):
        emitted_kinds(call, "x.sql", {})


def test_expired_never_comes_from_the_database() -> None:
    assert EventKind.EXPIRED not in DATABASE_KINDS
    assert parse_event('{"k": "expired", "q": "kyc", "i": 1}') is None


def test_a_parsed_event_carries_the_enum() -> None:
    event = parse_event('{"k": "decided", "q": "kyc", "i": 1, "d": 2}')
    assert event is not None
    assert event.kind is EventKind.DECIDED
