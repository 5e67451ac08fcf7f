"""The shared query-string form of a search: the console's result pages, the CSV routes and
`casework export search` read a search from it, so a link shows the same rows everywhere.

Each parameter is named exactly as the GraphQL input field (`externalKeyPrefix`); a list is
the parameter repeated (`queues=kyc&queues=payouts`); an enum value is its GraphQL name
(`PENDING`, `APPROVE`, `NEWEST_FIRST`); a boolean is `true` or `false`; a time is ISO 8601
(`2026-10-01T09:30:00Z`, UTC when it gives no offset) or a date (`2026-10-01`, midnight
UTC); a number is a whole number. Anything else is refused as InvalidInput naming the
parameter: a parameter the search does not have, a value that does not parse, or a single
value given twice. Whether the values make sense together (`priorityAtLeast` above
`priorityAtMost`, …) is the search's own check, made when it runs.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from server.domain.failures import InvalidInput
from server.domain.model import DecisionStatus, ItemState, Verdict
from server.domain.search.filters import DecisionSearch, ItemSearch, SearchOrder

S = TypeVar("S", ItemSearch, DecisionSearch)

# GraphQL's Int: a 32-bit signed whole number.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,10}")
# A date, or a date and time: ISO 8601's extended form (what fromisoformat reads, minus the
# compact forms a person would not mean).
_ISO_MOMENT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.,]+(Z|[+-][0-9:]+)?)?")


class _Bad(ValueError):
    """A value that does not parse; the message says what was expected."""


def camel_case(name: str) -> str:
    """A dataclass field's name as GraphQL spells it (`priority_at_least` → priorityAtLeast)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


class _Enum:
    """Reads an enum value by its GraphQL name."""

    def __init__(self, kind: type[enum.Enum], what: str) -> None:
        self.kind = kind
        self.what = what

    def __call__(self, value: str) -> enum.Enum:
        try:
            return self.kind[value]
        except KeyError:
            names = ", ".join(member.name for member in self.kind)
            raise _Bad(f"{value!r} is not {self.what} (one of {names})") from None


def _text(value: str) -> str:
    return value


def _number(value: str) -> int:
    if not _WHOLE_NUMBER.fullmatch(value) or not _INT_MIN <= int(value) <= _INT_MAX:
        raise _Bad(f"expected a whole number, got {value!r}")
    return int(value)


def _boolean(value: str) -> bool:
    if value not in ("true", "false"):
        raise _Bad(f"expected true or false, got {value!r}")
    return value == "true"


def parse_moment(value: str) -> datetime:
    """An ISO 8601 date and time (UTC unless it gives an offset), or a date: midnight UTC."""
    try:
        if not _ISO_MOMENT.fullmatch(value):
            raise ValueError(value)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(
            f"expected an ISO 8601 time (2026-10-01T09:30:00Z) or date (2026-10-01), got {value!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# Each field's parser, by the dataclass field's name; a list field is marked True.
_Parser = tuple[Callable[[str], Any], bool]
Parameters = Mapping[str, _Parser]
_ITEM_STATE = _Enum(ItemState, "an item state")
_VERDICT = _Enum(Verdict, "a verdict")
_STATUS = _Enum(DecisionStatus, "a decision status")
_ORDER = _Enum(SearchOrder, "an order")

ITEM_PARAMETERS: Parameters = {
    "queues": (_text, True),
    "states": (_ITEM_STATE, True),
    "external_key_prefix": (_text, False),
    "subject_ref": (_text, False),
    "priority_at_least": (_number, False),
    "priority_at_most": (_number, False),
    "enqueued_after": (parse_moment, False),
    "enqueued_before": (parse_moment, False),
    "decided_after": (parse_moment, False),
    "decided_before": (parse_moment, False),
    "decided_by": (_text, False),
    "verdict": (_VERDICT, False),
    "reason_code": (_text, False),
    "decision_status": (_STATUS, False),
    "overturned": (_boolean, False),
    "assigned_to": (_text, False),
    "held": (_boolean, False),
    "overdue": (_boolean, False),
    "has_notes": (_boolean, False),
    "order": (_ORDER, False),
}

DECISION_PARAMETERS: Parameters = {
    "queues": (_text, True),
    "reviewer": (_text, False),
    "verdict": (_VERDICT, False),
    "reason_code": (_text, False),
    "decided_after": (parse_moment, False),
    "decided_before": (parse_moment, False),
    "status": (_STATUS, False),
    "order": (_ORDER, False),
}


def value_hint(parse: Callable[[str], Any]) -> str:
    """What a parameter's value looks like, for help texts."""
    if isinstance(parse, _Enum):
        return "|".join(member.name for member in parse.kind)
    hints: dict[Callable[[str], Any], str] = {
        _text: "TEXT",
        _number: "N",
        _boolean: "true|false",
        parse_moment: "WHEN",
    }
    return hints[parse]


def _parse(
    kind: type[S], parsers: Parameters, pairs: Iterable[tuple[str, str]]
) -> S | InvalidInput:
    by_parameter = {camel_case(name): name for name in parsers}
    given: dict[str, Any] = {}
    for parameter, value in pairs:
        name = by_parameter.get(parameter)
        if name is None:
            known = ", ".join(by_parameter)
            return InvalidInput(
                f"{parameter}: not a filter of this search (its filters: {known})", parameter
            )
        parse, is_list = parsers[name]
        try:
            parsed = parse(value)
        except _Bad as bad:
            return InvalidInput(f"{parameter}: {bad}", parameter)
        if is_list:
            given.setdefault(name, []).append(parsed)
        elif name in given:
            return InvalidInput(f"{parameter}: given more than once; give it once", parameter)
        else:
            given[name] = parsed
    values: dict[str, Any] = {
        name: tuple(v) if isinstance(v, list) else v for name, v in given.items()
    }
    return kind(**values)


def item_search_from_params(pairs: Iterable[tuple[str, str]]) -> ItemSearch | InvalidInput:
    """An item search from a query string's (name, value) pairs, in their order."""
    return _parse(ItemSearch, ITEM_PARAMETERS, pairs)


def decision_search_from_params(
    pairs: Iterable[tuple[str, str]],
) -> DecisionSearch | InvalidInput:
    """A decision search from a query string's (name, value) pairs, in their order."""
    return _parse(DecisionSearch, DECISION_PARAMETERS, pairs)


def _value_text(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return str(value)


def search_params(search: ItemSearch | DecisionSearch) -> list[tuple[str, str]]:
    """The pairs that read back as `search` (its filters only; the default order is left
    out), for a link to the same rows elsewhere."""
    pairs: list[tuple[str, str]] = []
    for field in fields(search):
        value = getattr(search, field.name)
        if value is None or (field.name == "order" and value is SearchOrder.NEWEST_FIRST):
            continue
        values = value if isinstance(value, tuple) else (value,)
        pairs.extend((camel_case(field.name), _value_text(v)) for v in values)
    return pairs
