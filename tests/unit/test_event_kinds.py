"""The hint kinds the SQL writes and the ones Python reads are one list."""

from __future__ import annotations

import re
from pathlib import Path

from server.events.channels import DATABASE_KINDS, EventKind, parse_event

ROOT = Path(__file__).resolve().parents[2]
SQL_FILES = sorted([*ROOT.glob("db/queries/*.sql"), *ROOT.glob("db/migrations/*.sql")])

# `'k', 'decided'` or `'k', CASE WHEN … THEN 'escalated' ELSE 'decided' END` in a
# json_build_object; anything else after `'k',` is a shape this scan does not know.
_KEY = re.compile(r"'k',\s*")
_LITERAL = re.compile(r"'([a-z_]+)'")
_CASE = re.compile(r"CASE\b.*?\bEND\b", re.DOTALL)
_BRANCH = re.compile(r"\b(?:THEN|ELSE)\s+'([a-z_]+)'")


def emitted_kinds() -> dict[str, set[str]]:
    """Each kind the SQL files write as `k`, with the files that write it."""
    found: dict[str, set[str]] = {}
    for path in SQL_FILES:
        text = path.read_text()
        for key in _KEY.finditer(text):
            rest = text[key.end() :]
            literal, case = _LITERAL.match(rest), _CASE.match(rest)
            if literal:
                kinds = [literal.group(1)]
            elif case:
                kinds = _BRANCH.findall(case.group())
            else:
                raise AssertionError(f"{path.name}: cannot read the hint kind in {rest[:60]!r}")
            assert kinds, f"{path.name}: no kind in {rest[:60]!r}"
            for kind in kinds:
                found.setdefault(kind, set()).add(path.name)
    return found


def test_every_kind_the_sql_writes_is_a_database_kind() -> None:
    emitted = emitted_kinds()
    unknown = {kind: files for kind, files in emitted.items() if kind not in DATABASE_KINDS}
    assert not unknown, f"add these to EventKind, or parse_event drops them: {unknown}"


def test_every_database_kind_is_written_by_some_sql() -> None:
    # Also proves the scan still finds the hints: a kind nobody writes is dead code.
    assert set(emitted_kinds()) == {kind.value for kind in DATABASE_KINDS}


def test_expired_never_comes_from_the_database() -> None:
    assert EventKind.EXPIRED not in DATABASE_KINDS
    assert parse_event('{"k": "expired", "q": "kyc", "i": 1}') is None


def test_a_parsed_event_carries_the_enum() -> None:
    event = parse_event('{"k": "decided", "q": "kyc", "i": 1, "d": 2}')
    assert event is not None
    assert event.kind is EventKind.DECIDED
