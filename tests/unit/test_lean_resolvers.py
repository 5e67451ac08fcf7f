"""lean_resolvers calls argument-free methods directly, with the same self and Info, and
leaves every other resolver to Strawberry."""

from __future__ import annotations

from typing import Any

import pytest
import strawberry
from graphql import GraphQLObjectType
from strawberry.extensions import FieldExtension
from strawberry.types import Info

from server.graphql.lean_resolvers import lean_resolvers
from server.graphql.schema import build_schema


class Doubling(FieldExtension):
    def resolve(self, next_: Any, source: Any, info: Info, **kwargs: Any) -> Any:
        return next_(source, info, **kwargs) * 2


@strawberry.type
class Thing:
    count: int

    @strawberry.field
    def plain(self) -> int:
        return self.count + 1

    @strawberry.field
    def seen(self, info: Info) -> str:
        return f"{info.field_name} {info.path.as_list()} {info.context['who']} {self.count}"

    @strawberry.field
    def failing(self) -> int | None:
        raise ValueError(f"no figure for {self.count}")

    @strawberry.field
    def argued(self, by: int = 3) -> int:
        return self.count * by

    @strawberry.field
    async def later(self) -> int:
        return self.count

    extended: int = strawberry.field(resolver=lambda self: self.count, extensions=[Doubling()])


@strawberry.type
class Query:
    @strawberry.field
    def things(self) -> list[Thing]:
        return [Thing(count=1), Thing(count=2)]


DOCUMENT = "{ things { plain s: seen failing argued a: argued(by: 5) later extended } }"


async def run(schema: strawberry.Schema) -> tuple[Any, list[Any]]:
    result = await schema.execute(DOCUMENT, context_value={"who": "ada"})
    return result.data, [error.formatted for error in result.errors or ()]


async def test_the_answers_and_errors_are_strawberrys() -> None:
    lean = strawberry.Schema(Query)
    lean_resolvers(lean)

    expected = await run(strawberry.Schema(Query))
    found = await run(lean)

    assert found == expected
    assert found[0]["things"][1]["s"] == "seen ['things', 1, 's'] ada 2"
    assert found[0]["things"][0]["extended"] == 2


@pytest.mark.parametrize(
    ("field", "lean"),
    [
        ("plain", True),
        ("seen", True),
        ("failing", True),
        ("argued", False),
        ("later", False),
        ("extended", False),
        ("count", False),
    ],
)
def test_only_argument_free_sync_methods_are_replaced(field: str, lean: bool) -> None:
    schema = strawberry.Schema(Query)
    thing = schema._schema.type_map["Thing"]
    assert isinstance(thing, GraphQLObjectType)
    before = thing.fields[field].resolve
    lean_resolvers(schema)
    assert (thing.fields[field].resolve is not before) is lean


def test_the_service_keeps_its_guarded_root_resolvers() -> None:
    # Root fields are guarded (input_strings.py) and never replaced; ReviewItem.state is.
    schema = build_schema()._schema
    for root in (schema.query_type, schema.mutation_type):
        assert root is not None
        for field in root.fields.values():
            assert getattr(field.resolve, "__name__", "") == "guarded"
    item = schema.type_map["ReviewItem"]
    assert isinstance(item, GraphQLObjectType)
    assert getattr(item.fields["state"].resolve, "__name__", "") == "with_info"
