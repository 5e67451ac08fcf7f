"""argument_conversion converts every field's arguments of Casework's schema exactly as
Strawberry's convert_arguments does, and leaves the types it does not plan to Strawberry."""

from __future__ import annotations

import enum
import random
from typing import Any

import pytest
import strawberry
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
)
from strawberry.relay import GlobalID
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField
from strawberry.types.unset import UNSET

from server.graphql.argument_conversion import (
    convert_arguments,
    planned,
    strawberry_convert_arguments,
)
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import graphql_schema_of


def _value(type_: Any, rng: random.Random, depth: int = 0) -> Any:
    """A value of `type_` as graphql-core hands it to a resolver (leaves: any object,
    both conversions hand them on untouched)."""
    if isinstance(type_, GraphQLNonNull):
        return _value(type_.of_type, rng, depth)
    if rng.random() < 0.15:
        return None
    if isinstance(type_, GraphQLList):
        return [_value(type_.of_type, rng, depth + 1) for _ in range(rng.randrange(3))]
    if isinstance(type_, GraphQLInputObjectType):
        if depth > 4:
            return None
        return {
            name: _value(field.type, rng, depth + 1)
            for name, field in type_.fields.items()
            if rng.random() < 0.8
        }
    if isinstance(type_, GraphQLEnumType):
        return rng.choice(list(type_.values.values())).value
    return object()


def _fields_with_arguments(schema: strawberry.Schema) -> list[tuple[Any, StrawberryField]]:
    found = []
    for named in graphql_schema_of(schema).type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name.startswith("__"):
            continue
        for field in named.fields.values():
            definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if isinstance(definition, StrawberryField) and definition.arguments:
                found.append((field, definition))
    return found


def test_every_field_of_the_schema_converts_as_strawberry_does() -> None:
    schema = build_schema()
    fields = _fields_with_arguments(schema)
    assert len(fields) > 50
    rng = random.Random(29)
    for field, definition in fields:
        for _ in range(20):
            value = {
                name: _value(argument.type, rng)
                for name, argument in field.args.items()
                if rng.random() < 0.9
            }
            ours = convert_arguments(
                value, definition.arguments, schema.schema_converter.scalar_registry, schema.config
            )
            theirs = strawberry_convert_arguments(
                value,
                definition.arguments,
                scalar_registry=schema.schema_converter.scalar_registry,
                config=schema.config,
            )
            assert ours == theirs, (field, value)
            assert [type(v) for v in ours.values()] == [type(v) for v in theirs.values()]
    # Casework's own arguments are all planned (none is a Maybe or a GlobalID).
    assert all(planned(definition.arguments) for _, definition in fields)


class Colour(enum.Enum):
    RED = "red"


@strawberry.input
class Inner:
    tags: list[str]
    colour: Colour | None = None


@strawberry.input
class Outer:
    inner: Inner
    many: list[Inner] | None = strawberry.UNSET
    note: str | None = None


@strawberry.input
class WithId:
    id: GlobalID


@strawberry.type
class Query:
    @strawberry.field
    def outer(self, value: Outer, also: int | None = None) -> int:
        return 0

    @strawberry.field
    def by_id(self, value: WithId) -> int:
        return 0

    @strawberry.field
    def maybe(self, value: strawberry.Maybe[int]) -> int:
        return 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("outer", {"value": {"inner": {"tags": ["a"], "colour": Colour.RED}}}),
        ("outer", {"value": {"inner": {"tags": []}, "many": None, "note": "n"}, "also": 3}),
        ("outer", {"value": {"inner": {"tags": []}, "many": [{"tags": ["b"]}]}}),
        ("byId", {"value": {"id": "VGhpbmc6MQ=="}}),
        ("maybe", {"value": 4}),
        ("maybe", {}),
    ],
)
def test_planned_and_unplanned_types_convert_as_strawberry_does(
    field: str, value: dict[str, Any]
) -> None:
    schema = strawberry.Schema(query=Query)
    definition = (
        graphql_schema_of(schema).query_type.fields[field].extensions  # type: ignore[union-attr]
    )[GraphQLCoreConverter.DEFINITION_BACKREF]
    registry = schema.schema_converter.scalar_registry
    ours = convert_arguments(value, definition.arguments, registry, schema.config)
    theirs = strawberry_convert_arguments(
        value, definition.arguments, scalar_registry=registry, config=schema.config
    )
    assert ours == theirs
    assert planned(definition.arguments) is (field == "outer")
    assert ours.get("value", UNSET) is not UNSET or "value" not in value
