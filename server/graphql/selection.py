"""What a document selects below the field being resolved: a resolver that reads it can
load, in one await, the rows its children would otherwise each await for themselves.

Every awaited field costs graphql-core a coroutine, and a task when it has awaited siblings
(a dashboard of 50 queues awaited some 2,000 of them); children that find their rows
already loaded resolve synchronously instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionNode,
)
from strawberry.types import Info


def _fields(
    selections: Iterable[SelectionNode], fragments: dict[str, FragmentDefinitionNode]
) -> Iterator[FieldNode]:
    """The fields of selection sets, fragments and inline fragments flattened.

    Validation has refused unknown and cyclic fragments by the time anything resolves.
    """
    stack = list(selections)
    while stack:
        selection = stack.pop()
        if isinstance(selection, FieldNode):
            yield selection
        elif isinstance(selection, FragmentSpreadNode):
            stack.extend(fragments[selection.name.value].selection_set.selections)
        elif isinstance(selection, InlineFragmentNode):
            stack.extend(selection.selection_set.selections)


def _children(fields: Iterable[FieldNode]) -> list[SelectionNode]:
    return [
        child
        for field in fields
        if field.selection_set is not None
        for child in field.selection_set.selections
    ]


def selected_names(info: Info[Any, Any], *path: str) -> frozenset[str]:
    """The GraphQL names of the fields selected at `path` below the current field, under
    any alias: `selected_names(info, "edges", "node")` in a connection's resolver.

    A field under @skip or @include counts as selected: loading rows that go unused is
    harmless, a child that finds its rows missing is not.
    """
    # The raw graphql-core info: Strawberry's `selected_fields` converts the whole subtree,
    # arguments and directives included, at each call (about 0.1 ms for a queue's measures).
    raw = info._raw_info
    level = _children(raw.field_nodes)
    for step in path:
        level = _children(f for f in _fields(level, raw.fragments) if f.name.value == step)
    return frozenset(field.name.value for field in _fields(level, raw.fragments))
