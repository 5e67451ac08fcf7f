"""Every string a client can send, in every argument of the schema, refuses NUL, a lone
surrogate and an over-long value with a typed answer, logs no traceback and writes nothing.

The slots are found by walking the schema's root fields (queries, mutations, subscriptions),
their input objects and lists, so an argument added later is covered without editing this.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLUnionType,
    Undefined,
)

from server.graphql.input_strings import MAX_JSON_VALUE_DEPTH, MAX_STRING_CHARS
from server.graphql.schema import build_schema
from tests.api.conftest import Tokens
from tests.api.helpers import data_tables
from tests.conftest import TestDatabase
from tests.live.helpers import serve_casework
from tests.live.wsclient import graphql_socket

SCHEMA = build_schema()._schema
ROOTS = {
    "query": SCHEMA.query_type,
    "mutation": SCHEMA.mutation_type,
    "subscription": SCHEMA.subscription_type,
}
TEXT_SCALARS = {"String", "ID"}
JSON_SCALAR = "JSON"
FILLERS: dict[str, Any] = {
    "String": "x",
    "ID": "1",
    "Int": 1,
    "Float": 1.0,
    "Boolean": True,
    "JSON": {},
    # Ahead of any test run, within any bound on how far ahead a time may lie.
    "DateTime": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
}


@dataclass(frozen=True)
class Slot:
    operation: str
    field: str
    # Argument, then input fields and list indexes, down to the string or JSON value.
    path: tuple[str | int, ...]
    json: bool

    @property
    def name(self) -> str:
        text = ""
        for step in self.path:
            text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
        return text

    def __str__(self) -> str:
        return f"{self.operation} {self.field}({self.name})"


def _slots_in(
    type_: GraphQLInputType, path: tuple[str | int, ...], seen: frozenset[str]
) -> Iterator[tuple[tuple[str | int, ...], bool]]:
    if isinstance(type_, GraphQLNonNull):
        yield from _slots_in(type_.of_type, path, seen)
    elif isinstance(type_, GraphQLList):
        yield from _slots_in(type_.of_type, (*path, 0), seen)
    elif isinstance(type_, GraphQLInputObjectType):
        if type_.name not in seen:
            for name, field in type_.fields.items():
                yield from _slots_in(field.type, (*path, name), seen | {type_.name})
    elif isinstance(type_, GraphQLScalarType) and type_.name in TEXT_SCALARS:
        yield path, False
    elif isinstance(type_, GraphQLScalarType) and type_.name == JSON_SCALAR:
        yield path, True


def all_slots() -> list[Slot]:
    found = []
    for operation, root in ROOTS.items():
        assert root is not None
        for field_name, field in root.fields.items():
            for arg_name, arg in field.args.items():
                for path, is_json in _slots_in(arg.type, (arg_name,), frozenset()):
                    found.append(Slot(operation, field_name, path, is_json))
    return found


SLOTS = all_slots()


def filler(type_: GraphQLInputType) -> Any:
    """A value of the type with every required part present."""
    if isinstance(type_, GraphQLNonNull):
        return filler(type_.of_type)
    if isinstance(type_, GraphQLList):
        return [filler(type_.of_type)]
    if isinstance(type_, GraphQLInputObjectType):
        return {
            name: filler(field.type)
            for name, field in type_.fields.items()
            if isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined
        }
    if isinstance(type_, GraphQLEnumType):
        return next(iter(type_.values))
    assert isinstance(type_, GraphQLScalarType)
    return FILLERS[type_.name]


def _placed(type_: GraphQLInputType, value: Any, path: tuple[str | int, ...], bad: Any) -> Any:
    if not path:
        return bad
    while isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    step, rest = path[0], path[1:]
    if isinstance(type_, GraphQLList):
        assert isinstance(step, int)
        items = list(value) if value is not None else [filler(type_.of_type)]
        items[step] = _placed(type_.of_type, items[step], rest, bad)
        return items
    assert isinstance(type_, GraphQLInputObjectType)
    assert isinstance(step, str)
    fields = dict(value) if value is not None else filler(type_)
    inner = type_.fields[step].type
    fields[step] = _placed(inner, fields.get(step, filler(inner)), rest, bad)
    return fields


def request_for(slot: Slot, bad: Any) -> tuple[str, dict[str, Any]]:
    """The document and variables that send `bad` into the slot, all else well-formed."""
    root = ROOTS[slot.operation]
    assert root is not None
    field: GraphQLField = root.fields[slot.field]
    variables = {
        name: filler(arg.type)
        for name, arg in field.args.items()
        if isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined
    }
    top = slot.path[0]
    assert isinstance(top, str)
    variables[top] = _placed(field.args[top].type, variables.get(top), slot.path[1:], bad)
    declared = ", ".join(f"${name}: {field.args[name].type}" for name in variables)
    passed = ", ".join(f"{name}: ${name}" for name in variables)
    selection = (
        "{ __typename ... on InvalidInput { field message } }"
        if answers_invalid_input(slot)
        else "{ __typename }"
    )
    return f"{slot.operation}({declared}) {{ {slot.field}({passed}) {selection} }}", variables


def nested(depth: int) -> Any:
    value: Any = 1
    for level in range(depth):
        value = {"k": value} if (depth - level) % 2 else [value]
    return value


def bad_values(slot: Slot) -> list[tuple[str, Any, str]]:
    """(what, value, the field a mutation must name)."""
    if slot.json:
        return [
            ("NUL in a value", {"k": "a\x00b"}, f"{slot.name}.k"),
            ("NUL in a key", {"a\x00": 1}, slot.name),
            ("lone surrogate", {"k": "\ud800"}, f"{slot.name}.k"),
            ("too deep", nested(MAX_JSON_VALUE_DEPTH + 1), slot.name),
        ]
    return [
        ("NUL", "a\x00b", slot.name),
        ("lone surrogate", "x\udfff", slot.name),
        ("too long", "x" * (MAX_STRING_CHARS + 1), slot.name),
    ]


def test_the_schema_has_the_slots_the_issue_counts() -> None:
    """A floor, so a broken walk (finding nothing) cannot pass the tests below vacuously."""
    names = {str(slot) for slot in SLOTS}
    assert len([s for s in SLOTS if not s.json]) >= 39, sorted(names)
    assert {
        "mutation submitDecision(input.note)",
        "mutation enqueueItems(items[0].payload)",
        "mutation raiseException(input.evidence[0])",
        "mutation submitCorrection(input.changes)",
        "query queue(name)",
        "subscription queueBacklog(queue)",
    } <= names


async def table_contents(owner: asyncpg.Connection) -> dict[str, str]:
    """A digest of every data table: a refused call changes none. A token's last use is left
    out: any call notes it, refused or not."""
    contents = {}
    for name in await data_tables(owner):
        contents[name] = await owner.fetchval(
            "SELECT md5(coalesce(string_agg(r, '|' ORDER BY r), '')) FROM "
            f"(SELECT (to_jsonb(t) - 'last_used_at')::text AS r FROM \"{name}\" AS t) AS rows"
        )
    return contents


def answers_invalid_input(slot: Slot) -> bool:
    """A field whose result union has InvalidInput answers a bad string with it (every
    mutation, and the searches); any other field refuses it coded BAD_REQUEST."""
    if slot.operation == "subscription":
        return False
    root = ROOTS[slot.operation]
    assert root is not None
    result = root.fields[slot.field].type
    if isinstance(result, GraphQLNonNull):
        result = result.of_type
    return isinstance(result, GraphQLUnionType) and any(
        member.name == "InvalidInput" for member in result.types
    )


def refusal_problems(slot: Slot, what: str, expected_field: str, body: dict[str, Any]) -> str:
    """What is wrong with the answer, or "" if it is the typed refusal wanted."""
    if "Unexpected error" in json.dumps(body):
        return f"{slot} {what}: unexpected error: {body}"
    if answers_invalid_input(slot):
        result = (body.get("data") or {}).get(slot.field)
        if not result or result.get("__typename") != "InvalidInput":
            return f"{slot} {what}: not InvalidInput: {body}"
        if slot.json and what == "too deep":
            ok = result["field"].startswith(expected_field)
        else:
            ok = result["field"] == expected_field
        return "" if ok else f"{slot} {what}: field {result['field']!r}, not {expected_field!r}"
    codes = [error.get("extensions", {}).get("code") for error in body.get("errors", [])]
    return "" if codes == ["BAD_REQUEST"] else f"{slot} {what}: codes {codes}: {body}"


async def test_every_string_slot_over_http_refuses_unstorable_and_long_strings(
    client: httpx.AsyncClient,
    tokens: Tokens,
    kyc: str,
    owner_conn: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = await table_contents(owner_conn)
    problems = []
    with caplog.at_level(logging.WARNING):
        for slot in SLOTS:
            if slot.operation == "subscription":
                continue
            for what, bad, expected_field in bad_values(slot):
                query, variables = request_for(slot, bad)
                # ensure_ascii (the default) sends a lone surrogate as the escape "\ud800".
                response = await client.post(
                    "/graphql",
                    content=json.dumps({"query": query, "variables": variables}),
                    headers={
                        "Authorization": f"Bearer {tokens.admin}",
                        "Content-Type": "application/json",
                    },
                )
                if response.status_code != 200:
                    problems.append(f"{slot} {what}: HTTP {response.status_code}")
                    continue
                if problem := refusal_problems(slot, what, expected_field, response.json()):
                    problems.append(problem)
    assert problems == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert await table_contents(owner_conn) == before


async def test_every_subscription_string_slot_refuses_them_over_a_socket(
    test_database: TestDatabase, tokens: Tokens, owner_conn: asyncpg.Connection
) -> None:
    before = await table_contents(owner_conn)
    problems = []
    async with (
        serve_casework(test_database) as casework,
        graphql_socket(casework.url, tokens.admin) as socket,
    ):
        for slot in SLOTS:
            if slot.operation != "subscription":
                continue
            for what, bad, expected_field in bad_values(slot):
                query, variables = request_for(slot, bad)
                operation = await socket.subscribe(query, **variables)
                message = await socket.message(operation)
                # Strawberry sends an error raised as execution starts as a `next` result with
                # errors, not as an `error` message; either is a refusal, if it is typed.
                if message["type"] == "error":
                    body = {"errors": message["payload"]}
                else:
                    body = message["payload"]
                    assert message["type"] == "next", message
                if problem := refusal_problems(slot, what, expected_field, body):
                    problems.append(problem)
    assert problems == []
    casework.assert_no_traceback()
    assert not [line for line in casework.log if "unexpected error" in line.lower()]
    assert await table_contents(owner_conn) == before
