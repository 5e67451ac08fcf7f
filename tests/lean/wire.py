"""Two answers to one request, compared as a client reads them.

What must be identical: the HTTP status, the bytes of the body's `data` and `errors`
members as sent, and the headers a client acts on (Content-Type, Retry-After,
WWW-Authenticate, Allow, X-Request-ID). Why members and not the whole body:
- the order of a JSON object's members, and the bytes between them, are the encoder's
  business; GraphQL over HTTP fixes what `data` and `errors` hold, and that is what a
  client's JSON parser hands it (a lean path may build `{"errors":…,"data":…}`);
- `extensions` may carry `replica.maxLagSeconds`, a lag measured per request: it differs
  between any two requests, on one path as on the other. The other extensions are compared
  as parsed values.
The request id is a header: both requests send the same X-Request-ID, which each path must
echo unchanged, so it is compared exactly too.

Two kinds of values differ between any two executions, on one path as on the other, and are
compared by shape only, token by token, everything else byte for byte:
- ages read from the clock (`…AgeSeconds`: a number, at the same place);
- a mutation that succeeds makes values afresh on every execution, on either path: new ids,
lease tokens, `now()`: strings that are a UUID, or an RFC 3339 timestamp of the same
shape, and that differ consistently (one value of A always stands for the same value of B).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# The headers a client acts on.
COMPARED_HEADERS = ("content-type", "retry-after", "www-authenticate", "allow", "x-request-id")
COMPARED_MEMBERS = ("data", "errors")
# Extensions measured per request (docs/operations.md, "Read replicas").
MEASURED_EXTENSIONS = frozenset({"replica"})

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)

    def data(self) -> object:
        parsed = self.json()
        return parsed.get("data") if isinstance(parsed, dict) else None


class NotAnObject(ValueError):
    """A body that is not one JSON object: compared as whole bytes instead."""


def members(body: str) -> dict[str, str]:
    """Each top-level member's value, as the exact text it was sent as."""
    at = _WHITESPACE.match(body, 0).end()  # type: ignore[union-attr]
    if body[at : at + 1] != "{":
        raise NotAnObject("not a JSON object")
    at = _WHITESPACE.match(body, at + 1).end()  # type: ignore[union-attr]
    found: dict[str, str] = {}
    if body[at : at + 1] == "}":
        return found
    while True:
        try:
            key, at = _DECODER.raw_decode(body, at)
        except json.JSONDecodeError as error:
            raise NotAnObject(str(error)) from None
        if not isinstance(key, str) or key in found:
            raise NotAnObject(f"member name {key!r}")
        at = _WHITESPACE.match(body, at).end()  # type: ignore[union-attr]
        if body[at : at + 1] != ":":
            raise NotAnObject("no ':' after a member name")
        start = _WHITESPACE.match(body, at + 1).end()  # type: ignore[union-attr]
        try:
            _, end = _DECODER.raw_decode(body, start)
        except json.JSONDecodeError as error:
            raise NotAnObject(str(error)) from None
        found[key] = body[start:end]
        at = _WHITESPACE.match(body, end).end()  # type: ignore[union-attr]
        if body[at : at + 1] == "}":
            if body[at + 1 :].strip(" \t\n\r"):
                raise NotAnObject("text after the object")
            return found
        if body[at : at + 1] != ",":
            raise NotAnObject("no ',' between members")
        at += 1


# JSON's tokens, each kept as its exact text.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null|[\[\]{}:,]|\s+')
_UUID = re.compile(r'"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"')
_TIMESTAMP = re.compile(r'"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9]{2}:[0-9]{2})?"')


def _tokens(text: str) -> list[str] | None:
    """The text's JSON tokens, whitespace included (it must be the same too); None if some
    of it is no JSON token."""
    found, at = [], 0
    while at < len(text):
        token = _TOKEN.match(text, at)
        if token is None:
            return None
        found.append(token.group())
        at = token.end()
    return found


_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")
# Fields whose value is the clock read against a stored time: ages in seconds, ticking
# between the two requests of a pair whatever the path.
CLOCK_READINGS = re.compile(r'"[A-Za-z0-9]*AgeSeconds"')


def _is_clock_reading(tokens: list[str], at: int) -> bool:
    return (
        at >= 2
        and tokens[at - 1] == ":"
        and CLOCK_READINGS.fullmatch(tokens[at - 2]) is not None
        and _NUMBER.fullmatch(tokens[at]) is not None
    )


def _fresh_kind(token: str) -> str | None:
    """What kind of fresh value a string token is, its shape included; None if none."""
    if _UUID.fullmatch(token):
        return "uuid"
    if _TIMESTAMP.fullmatch(token):
        return "timestamp:" + re.sub("[0-9]", "0", token)
    return None


@dataclass
class FreshValues:
    """Fresh values seen so far, one body to the other: the correspondence must hold."""

    forward: dict[str, str] = field(default_factory=dict)
    backward: dict[str, str] = field(default_factory=dict)

    def same_text_except_fresh(self, a: str, b: str, *, made: bool) -> bool:
        """made: values made afresh (ids, tokens, timestamps) may differ, besides the
        clock's readings."""
        left, right = _tokens(a), _tokens(b)
        if left is None or right is None or len(left) != len(right):
            return False
        for at, (x, y) in enumerate(zip(left, right, strict=True)):
            if x != y and _is_clock_reading(left, at) and _NUMBER.fullmatch(y):
                continue
            if x == y:
                # A fresh value seen changed earlier must change the same way everywhere.
                if self.forward.get(x, x) != x or self.backward.get(y, y) != y:
                    return False
                continue
            kind = _fresh_kind(x) if made else None
            if kind is None or kind != _fresh_kind(y):
                return False
            if self.forward.setdefault(x, y) != y or self.backward.setdefault(y, x) != x:
                return False
        return True


def differences(a: Answer, b: Answer, *, fresh_values: bool = False) -> list[str]:
    """What a client would see differ between two answers; empty when none.

    fresh_values: the request was a mutation that may succeed, so values made afresh by
    each execution may differ (the module's docstring)."""
    found = [] if a.status == b.status else [f"status {a.status} != {b.status}"]
    for name in COMPARED_HEADERS:
        if a.headers.get(name) != b.headers.get(name):
            found.append(f"header {name}: {a.headers.get(name)!r} != {b.headers.get(name)!r}")
    try:
        left, right = members(a.body.decode()), members(b.body.decode())
    except (NotAnObject, UnicodeDecodeError) as error:
        if a.body != b.body:
            found.append(f"body (not a JSON object: {error}): {a.body!r} != {b.body!r}")
        return found
    if sorted(left) != sorted(right):
        found.append(f"members {sorted(left)} != {sorted(right)}")
    fresh = FreshValues()
    for name in COMPARED_MEMBERS:
        x, y = left.get(name), right.get(name)
        if x == y:
            continue
        if (
            x is not None
            and y is not None
            and fresh.same_text_except_fresh(x, y, made=fresh_values)
        ):
            continue
        found.append(f"{name}:\n  {x}\n  {y}")
    for name in sorted(set(left) & set(right) - set(COMPARED_MEMBERS)):
        x_value, y_value = json.loads(left[name]), json.loads(right[name])
        if name == "extensions" and isinstance(x_value, dict) and isinstance(y_value, dict):
            x_value = {k: v for k, v in x_value.items() if k not in MEASURED_EXTENSIONS}
            y_value = {k: v for k, v in y_value.items() if k not in MEASURED_EXTENSIONS}
        if x_value != y_value:
            found.append(f"{name}: {left[name]} != {right[name]}")
    return found
