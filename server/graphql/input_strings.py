"""Every string a client sends is storable and bounded, checked once for all root fields.

PostgreSQL stores neither NUL nor a lone surrogate (not UTF-8) in text or jsonb; the driver
or the server refuses them mid-query, and the client used to see "Unexpected error.". The
walk below looks at the coerced arguments of each root field before its resolver runs:
top-level arguments, input-object fields, list elements, and every key and string inside a
JSON value (payloads, context, changes). It also bounds every String and ID argument to
MAX_STRING_CHARS, far above any field's own limit (the domain's: a note is 4,000, a label
200, ...), and the nesting of JSON values to MAX_JSON_VALUE_DEPTH.

`guard_root_fields` puts the check in front of each root field's resolver. A mutation
answers the refusal as its union's InvalidInput (every mutation union has it)
with the argument's path as `field` (`input.note`, `items[3].payload.applicant`); a query
or a subscription raises ClientError, coded BAD_REQUEST.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLResolveInfo,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    get_named_type,
)

from server.domain.parsing import MAX_VALUE_DEPTH, UNSTORABLE_CHARACTER, unstorable
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.errors import InvalidInput
from server.graphql.observe import note_error_member

MAX_STRING_CHARS = 10_000
MAX_JSON_VALUE_DEPTH = MAX_VALUE_DEPTH
JSON_SCALAR = "JSON"
INVALID_INPUT = "InvalidInput"
# What a JSON value holds that can be refused: text, and containers that hold more.
_WALKED = frozenset({str, dict, list})


@dataclass(frozen=True)
class Refusal:
    field: str
    message: str


# Where a value sits, as (parent, step): built into text only for a refusal, since a payload
# can hold many thousands of values.
Where = tuple["Where | None", str | int]


def _text(where: Where) -> str:
    steps: list[str | int] = []
    at: Where | None = where
    while at is not None:
        at, step = at
        steps.append(step)
    text = ""
    for step in reversed(steps):
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
    return text


def refusal_in(
    arguments: Mapping[str, Any], definitions: Mapping[str, GraphQLArgument]
) -> Refusal | None:
    """The first unstorable, over-long or over-nested value in the coerced arguments.

    A loop over an explicit stack, not recursion: nothing a client sends can overflow it.
    """
    stack: list[tuple[Any, GraphQLInputType, Where]] = [
        (arguments[name], definition.type, (None, name))
        for name, definition in reversed(list(definitions.items()))
        if name in arguments
    ]
    while stack:
        value, type_, where = stack.pop()
        if value is None:
            continue
        if isinstance(type_, GraphQLNonNull):
            stack.append((value, type_.of_type, where))
        elif isinstance(type_, GraphQLList):
            if isinstance(value, list):
                stack.extend(
                    (item, type_.of_type, (where, index))
                    for index, item in reversed(list(enumerate(value)))
                )
            else:
                stack.append((value, type_.of_type, where))
        elif isinstance(type_, GraphQLInputObjectType):
            if isinstance(value, dict):
                stack.extend(
                    (value[name], field.type, (where, name))
                    for name, field in reversed(list(type_.fields.items()))
                    if name in value
                )
        elif isinstance(type_, GraphQLScalarType) and type_.name == JSON_SCALAR:
            if found := _json_refusal(value, where):
                return found
        elif isinstance(value, str):
            # String, ID (enums and other scalars are not text once coerced).
            if len(value) > MAX_STRING_CHARS:
                path = _text(where)
                return Refusal(
                    path, f"{path} is {len(value)} characters; at most {MAX_STRING_CHARS}"
                )
            if problem := unstorable(value):
                path = _text(where)
                return Refusal(path, f"{path} {problem}")
    return None


def _json_refusal(value: Any, where: Where) -> Refusal | None:
    """As refusal_in, inside a JSON value: every key and string storable, nesting bounded.

    Its own loop because a payload may hold hundreds of thousands of values: only strings
    and containers are looked at, by exact type (JSON decodes to exactly these types).
    """
    search = UNSTORABLE_CHARACTER.search
    stack: list[tuple[Any, Where, int]] = [(value, where, 0)]
    while stack:
        current, at, depth = stack.pop()
        kind = type(current)
        if kind is str:
            if search(current) and (problem := unstorable(current)):
                path = _text(at)
                return Refusal(path, f"{path} {problem}")
            continue
        if depth >= MAX_JSON_VALUE_DEPTH:
            path = _text(at)
            return Refusal(path, f"{path} nests deeper than {MAX_JSON_VALUE_DEPTH} levels of JSON")
        if kind is dict:
            for key, item in current.items():
                if type(key) is str and search(key) and (problem := unstorable(key)):
                    path = _text(at)
                    return Refusal(path, f"a key in {path} {problem}")
                if type(item) in _WALKED:
                    stack.append((item, (at, str(key)), depth + 1))
        elif kind is list:
            for index, item in enumerate(current):
                if type(item) in _WALKED:
                    stack.append((item, (at, index), depth + 1))
        # A bare number, boolean or null holds no text: the field's own check answers for
        # its type (a payload must be an object).
    return None


def _answers_invalid_input(field: GraphQLField) -> bool:
    named = get_named_type(field.type)
    return isinstance(named, GraphQLUnionType) and any(
        member.name == INVALID_INPUT for member in named.types
    )


def guard_root_fields(schema: GraphQLSchema) -> None:
    """Wraps the resolver of every root query and mutation field, and the source of every
    subscription, with the check above. Only root fields: the fields below them take their
    arguments from the server's own records, and a hook on every field (a Strawberry
    `resolve` extension) would cost a call per resolved value on every dashboard read."""
    for root in (schema.query_type, schema.mutation_type):
        for field in () if root is None else root.fields.values():
            if field.resolve is not None:
                field.resolve = _guarded(field, field.resolve)
    if schema.subscription_type is not None:
        for field in schema.subscription_type.fields.values():
            if field.subscribe is not None:
                field.subscribe = _guarded(field, field.subscribe)


def _guarded(field: GraphQLField, resolve: Callable[..., Any]) -> Callable[..., Any]:
    answers_invalid_input = _answers_invalid_input(field)

    def guarded(root: Any, info: GraphQLResolveInfo[Any], **arguments: Any) -> Any:
        found = refusal_in(arguments, field.args)
        if found is None:
            return resolve(root, info, **arguments)
        if answers_invalid_input:
            note_error_member("InvalidInput")
            return InvalidInput(message=found.message, field=found.field)
        raise ClientError(found.message, ErrorCode.BAD_REQUEST)

    return guarded
