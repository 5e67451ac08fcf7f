"""Hypothesis strategies for an operation's variables, from its definitions and the schema.

`valid_variables` draws values each variable's type accepts, biased towards the seeded
state's names and ids (so some reach real rows). `invalid_variables` draws valid ones and
breaks one thing, naming what it broke (the example's class):
null for a non-null, an Int beyond 32 bits, an unknown enum value, a wrong scalar type, a
required input field missing, an input field too many, a required variable missing, a
variable too many.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLSchema,
    OperationDefinitionNode,
    is_input_type,
    type_from_ast,
)
from graphql.pyutils import Undefined
from hypothesis import strategies as st

VALID = "valid"
NULL_FOR_NON_NULL = "null for a non-null"
INT_BEYOND_32_BITS = "Int beyond 32 bits"
UNKNOWN_ENUM_VALUE = "unknown enum value"
WRONG_SCALAR_TYPE = "wrong scalar type"
MISSING_INPUT_FIELD = "missing required input field"
EXTRA_INPUT_FIELD = "extra input field"
MISSING_VARIABLE = "missing required variable"
EXTRA_VARIABLE = "extra variable"

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Vocabulary:
    """Names and ids of the seeded state, which generated strings and ids are drawn from."""

    strings: tuple[str, ...]
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Variables:
    kind: str
    values: dict[str, Any]
    # Sent without a `variables` member at all (only for operations without variables).
    omitted: bool = False


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=5,
)
_TIMESTAMPS = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
).map(datetime.isoformat)


def _scalar(scalar: GraphQLScalarType, words: Vocabulary) -> st.SearchStrategy[Any]:
    name = scalar.name
    if name == "Int":
        return st.integers(-3, 400) | st.integers(-(2**31), 2**31 - 1)
    if name == "Float":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5)
    if name == "Boolean":
        return st.booleans()
    if name == "ID":
        return st.sampled_from(words.ids) | st.uuids().map(str) | st.text(max_size=6)
    if name == "String":
        return st.sampled_from(words.strings) | st.text(max_size=12)
    if name == "DateTime":
        return _TIMESTAMPS
    if name == "JSON":
        return _JSON
    raise AssertionError(f"no strategy for the scalar {name}")


def _required(field_type: GraphQLInputType, default: Any) -> bool:
    return isinstance(field_type, GraphQLNonNull) and default is Undefined


def value_of(
    kind: GraphQLInputType, words: Vocabulary, depth: int = 0, *, full: bool = False
) -> st.SearchStrategy[Any]:
    """Values `kind` accepts (depth bounds recursive input types). full: every optional
    field present and not null, so that each place a type allows is in the value."""
    if isinstance(kind, GraphQLNonNull):
        return _non_null(kind.of_type, words, depth, full)
    if depth > 2:
        return st.none()
    if full:
        return _non_null(kind, words, depth, full)
    return st.none() | _non_null(kind, words, depth, full)


def _non_null(kind: Any, words: Vocabulary, depth: int, full: bool) -> st.SearchStrategy[Any]:
    if isinstance(kind, GraphQLList):
        element = value_of(kind.of_type, words, depth + 1, full=full)
        return st.lists(element, min_size=1 if full else 0, max_size=3)
    if isinstance(kind, GraphQLEnumType):
        return st.sampled_from(sorted(kind.values))
    if isinstance(kind, GraphQLScalarType):
        return _scalar(kind, words)
    assert isinstance(kind, GraphQLInputObjectType), kind
    required, optional = {}, {}
    for name, field in kind.fields.items():
        strategy = value_of(field.type, words, depth + 1, full=full)
        if full or _required(field.type, field.default_value):
            required[name] = strategy
        else:
            optional[name] = strategy
    return st.fixed_dictionaries(required, optional=optional)


def definitions(
    operation: OperationDefinitionNode, schema: GraphQLSchema
) -> dict[str, tuple[GraphQLInputType, bool]]:
    """Each variable's type, and whether a request must send it."""
    found: dict[str, tuple[GraphQLInputType, bool]] = {}
    for definition in operation.variable_definitions or ():
        kind = type_from_ast(schema, definition.type)
        assert is_input_type(kind), definition
        required = isinstance(kind, GraphQLNonNull) and definition.default_value is None
        found[definition.variable.name.value] = (kind, required)
    return found


def valid_variables(
    operation: OperationDefinitionNode,
    schema: GraphQLSchema,
    words: Vocabulary,
    *,
    full: bool = False,
) -> st.SearchStrategy[Variables]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, (kind, must) in definitions(operation, schema).items():
        (required if must or full else optional)[name] = value_of(kind, words, full=full)
    values = st.fixed_dictionaries(required, optional=optional)
    if operation.variable_definitions:
        return values.map(lambda found: Variables(VALID, found))
    return st.booleans().map(lambda omitted: Variables(VALID, {}, omitted=omitted))


def _sites(value: Any, kind: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    """Every place in a valid value, with the type there."""
    yield path, kind
    inner = kind.of_type if isinstance(kind, GraphQLNonNull) else kind
    if isinstance(inner, GraphQLList) and isinstance(value, list):
        for index, element in enumerate(value):
            yield from _sites(element, inner.of_type, (*path, index))
    elif isinstance(inner, GraphQLInputObjectType) and isinstance(value, dict):
        for name, field in inner.fields.items():
            if name in value:
                yield from _sites(value[name], field.type, (*path, name))


def _set(values: dict[str, Any], path: Path, new: Any) -> None:
    target: Any = values
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new


def _get(values: dict[str, Any], path: Path) -> Any:
    target: Any = values
    for step in path:
        target = target[step]
    return target


_WRONG = {
    "Int": st.sampled_from(["1", 1.5, True, [], {}]),
    "Float": st.sampled_from(["1.0", True, {}]),
    "Boolean": st.sampled_from(["true", 1, 0, {}]),
    "ID": st.sampled_from([True, 1.5, {}, []]),
    "String": st.sampled_from([1, True, 2.5, {}, [1]]),
    "DateTime": st.sampled_from(["yesterday", "2026-13-45T00:00:00Z", 1700000000, True]),
}


INVALID_CLASSES = (
    NULL_FOR_NON_NULL,
    INT_BEYOND_32_BITS,
    UNKNOWN_ENUM_VALUE,
    WRONG_SCALAR_TYPE,
    MISSING_INPUT_FIELD,
    EXTRA_INPUT_FIELD,
    MISSING_VARIABLE,
    EXTRA_VARIABLE,
)


def _named_types(kind: Any, depth: int = 0) -> Iterator[Any]:
    """Every named type a value of `kind` may hold, its own included."""
    while isinstance(kind, GraphQLNonNull | GraphQLList):
        kind = kind.of_type
    yield kind
    if isinstance(kind, GraphQLInputObjectType) and depth < 3:
        for field in kind.fields.values():
            yield from _named_types(field.type, depth + 1)


def invalid_classes(operation: OperationDefinitionNode, schema: GraphQLSchema) -> list[str]:
    """The classes of invalid variables this operation's definitions can have."""
    declared = definitions(operation, schema)
    named = [named for kind, _ in declared.values() for named in _named_types(kind)]
    scalars = {kind.name for kind in named if isinstance(kind, GraphQLScalarType)}
    objects = [kind for kind in named if isinstance(kind, GraphQLInputObjectType)]
    found = {
        EXTRA_VARIABLE: True,
        MISSING_VARIABLE: any(must for _, must in declared.values()),
        NULL_FOR_NON_NULL: any(isinstance(kind, GraphQLNonNull) for kind, _ in declared.values()),
        INT_BEYOND_32_BITS: "Int" in scalars,
        UNKNOWN_ENUM_VALUE: any(isinstance(kind, GraphQLEnumType) for kind in named),
        WRONG_SCALAR_TYPE: bool(scalars & set(_WRONG)),
        EXTRA_INPUT_FIELD: bool(objects),
        MISSING_INPUT_FIELD: any(
            _required(f.type, f.default_value) for kind in objects for f in kind.fields.values()
        ),
    }
    return [kind for kind in INVALID_CLASSES if found[kind]]


@st.composite
def invalid_variables(
    draw: st.DrawFn,
    operation: OperationDefinitionNode,
    schema: GraphQLSchema,
    words: Vocabulary,
    wanted: str,
) -> Variables:
    """Valid variables, every optional one present, with one thing of the class `wanted`
    (one of invalid_classes) broken."""
    values = copy.deepcopy(draw(valid_variables(operation, schema, words, full=True)).values)
    declared = definitions(operation, schema)
    places = [
        site
        for name, (kind, _) in declared.items()
        if name in values
        for site in _sites(values[name], kind, (name,))
    ]
    choices: list[tuple[str, Any]] = [(EXTRA_VARIABLE, None)]
    choices += [(MISSING_VARIABLE, name) for name, (_, must) in declared.items() if must]
    for path, kind in places:
        inner = kind.of_type if isinstance(kind, GraphQLNonNull) else kind
        if isinstance(kind, GraphQLNonNull):
            choices.append((NULL_FOR_NON_NULL, path))
        if isinstance(inner, GraphQLScalarType) and inner.name == "Int":
            choices.append((INT_BEYOND_32_BITS, path))
        if isinstance(inner, GraphQLEnumType):
            choices.append((UNKNOWN_ENUM_VALUE, path))
        if isinstance(inner, GraphQLScalarType) and inner.name in _WRONG:
            choices.append((WRONG_SCALAR_TYPE, path))
        if isinstance(inner, GraphQLInputObjectType) and isinstance(_get(values, path), dict):
            choices.append((EXTRA_INPUT_FIELD, path))
            if any(_required(f.type, f.default_value) for f in inner.fields.values()):
                choices.append((MISSING_INPUT_FIELD, path))
    places_of_kind = [place for found, place in choices if found == wanted]
    assert places_of_kind, f"{wanted}: no place in {values}"
    kind, where = wanted, draw(st.sampled_from(places_of_kind))
    if kind == EXTRA_VARIABLE:
        values[draw(st.sampled_from(["notAVariable", "queue_", "extra"]))] = 1
    elif kind == MISSING_VARIABLE:
        values.pop(where, None)
    elif kind == NULL_FOR_NON_NULL:
        _set(values, where, None)
    elif kind == INT_BEYOND_32_BITS:
        beyond = st.integers(2**31, 2**70) | st.integers(-(2**70), -(2**31) - 1)
        _set(values, where, draw(beyond))
    elif kind == UNKNOWN_ENUM_VALUE:
        _set(values, where, draw(st.sampled_from(["NOT_A_VALUE", "approve", "", "APPROVED"])))
    elif kind == WRONG_SCALAR_TYPE:
        inner = _type_at(declared, where)
        _set(values, where, draw(_WRONG[inner.name]))
    elif kind == EXTRA_INPUT_FIELD:
        _get(values, where)["notAField"] = draw(st.sampled_from([1, "x", None]))
    else:
        _drop_required(draw, values, where, _type_at(declared, where))
    return Variables(kind, values)


def _type_at(declared: Mapping[str, tuple[GraphQLInputType, bool]], path: Sequence[Any]) -> Any:
    kind: Any = declared[path[0]][0]
    for step in path[1:]:
        kind = kind.of_type if isinstance(kind, GraphQLNonNull) else kind
        kind = kind.of_type if isinstance(step, int) else kind.fields[step].type
    return kind.of_type if isinstance(kind, GraphQLNonNull) else kind


def _drop_required(
    draw: st.DrawFn, values: dict[str, Any], path: Path, kind: GraphQLInputObjectType
) -> None:
    names = sorted(n for n, f in kind.fields.items() if _required(f.type, f.default_value))
    _get(values, path).pop(draw(st.sampled_from(names)), None)
