"""LeafExecutionContext answers exactly as graphql-core's general path does: values, nulls,
errors and their paths, for every kind of leaf, and takes the general path where it must."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.scalars import JSON
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from server.graphql.leaves import LeafExecutionContext, attribute_leaves
from server.graphql.schema import build_schema


@strawberry.enum
class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


async def forty_two() -> int:
    return 42


@strawberry.type
class Thing:
    count: int
    maybe: int | None
    name: str
    colour: Colour
    at: datetime
    ident: strawberry.ID
    payload: JSON
    # Holds an awaitable: graphql-core awaits what a field's value is.
    later: int

    @strawberry.field
    def doubled(self) -> int:
        return self.count * 2


def thing(**changes: Any) -> Thing:
    values: dict[str, Any] = {
        "count": 1,
        "maybe": None,
        "name": "one",
        "colour": Colour.BLUE,
        "at": datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
        "ident": strawberry.ID("7"),
        "payload": {"a": [1, "b"]},
        "later": 3,
    }
    values.update(changes)
    return Thing(**values)


@strawberry.type
class Query:
    @strawberry.field
    def things(self) -> list[Thing]:
        return [thing(), thing(count=2, maybe=5, colour=Colour.RED, later=forty_two())]

    @strawberry.field
    def broken(self) -> list[Thing | None]:
        # A null and a value that is no Int, each in a non-null field of a nullable element;
        # an enum value outside the enum; a string where an Int belongs, in a nullable field.
        return [thing(count=None), thing(count="many"), thing(colour="green"), thing(maybe="x")]

    @strawberry.field
    def strict(self) -> list[Thing]:
        # The error bubbles through non-null elements up to the nullable root field.
        return [thing(), thing(name=None)]


ALL = "count maybe name colour at ident payload later doubled"
DOCUMENTS = [
    "{ things { " + ALL + " } }",
    "{ things { c: count n: name ...f } } fragment f on Thing { colour ... { later } }",
    "{ broken { count maybe colour } }",
    "{ strict { name count } }",
]


class Shout(SchemaExtension):
    """An extension that resolves fields: a middleware around every resolver."""

    def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        value = _next(root, info, *args, **kwargs)
        return value.upper() if isinstance(value, str) else value


@pytest.mark.parametrize("extensions", [[], [Shout]], ids=["plain", "middleware"])
@pytest.mark.parametrize("document", DOCUMENTS)
async def test_the_answer_is_the_general_paths(
    document: str, extensions: list[type[SchemaExtension]]
) -> None:
    general = strawberry.Schema(
        Query,
        extensions=extensions,
        execution_context_class=StrawberryGraphQLCoreExecutionContext,
    )
    direct = strawberry.Schema(
        Query, extensions=extensions, execution_context_class=LeafExecutionContext
    )

    expected = await general.execute(document)
    found = await direct.execute(document)

    assert found.data == expected.data
    assert [e.formatted for e in found.errors or ()] == [e.formatted for e in expected.errors or ()]


def test_plain_attributes_are_read_directly_and_resolvers_are_not() -> None:
    leaves = attribute_leaves(strawberry.Schema(Query)._schema)
    assert {name for type_name, name in leaves if type_name == "Thing"} == {
        "count",
        "maybe",
        "name",
        "colour",
        "at",
        "ident",
        "payload",
        "later",
    }
    assert not {name for type_name, name in leaves if type_name == "Query"}


def test_the_service_reads_its_leaves_directly_but_never_a_guarded_root_field() -> None:
    schema = build_schema()._schema
    leaves = attribute_leaves(schema)
    assert ("Decision", "reviewer") in leaves
    assert ("ReviewItem", "leaseCount") in leaves
    assert ("ReviewItem", "state") not in leaves
    roots = {root.name for root in (schema.query_type, schema.mutation_type) if root}
    assert not [key for key in leaves if key[0] in roots]
