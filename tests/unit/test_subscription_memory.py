"""A long subscription must not grow with the number of events it has sent."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
import strawberry
from graphql import parse
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from server.graphql.schema import PerEventExecutionContext


@strawberry.type
class Figure:
    pending: int

    @strawberry.field
    def detail(self) -> Figure:
        return Figure(pending=self.pending)


@strawberry.type
class Query:
    ok: bool = True


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def figures(self) -> AsyncGenerator[Figure, None]:
        yield Figure(pending=0)


SCHEMA = strawberry.Schema(query=Query, subscription=Subscription)
DOCUMENT = parse("subscription { figures { pending detail { pending } } }")


def memo_after_events(context_class: type[Any], events: int) -> int:
    executor = context_class.build(SCHEMA._schema, DOCUMENT)
    for n in range(events):
        per_event = executor.build_per_event_executor(Figure(pending=n))
        result = per_event.execute_operation(False)
        assert not getattr(result, "errors", None), result
    return len(executor._relevant_sub_fields)


@pytest.mark.parametrize("events", [10, 1000])
def test_the_subscription_memo_does_not_grow_per_event(events: int) -> None:
    assert memo_after_events(PerEventExecutionContext, events) == 0


def test_the_library_default_does_grow() -> None:
    """The defect the subclass works around; if this starts failing, graphql-core fixed it
    and PerEventExecutionContext can go."""
    assert memo_after_events(StrawberryGraphQLCoreExecutionContext, 100) >= 100
