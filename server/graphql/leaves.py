"""Scalar and enum fields that are plain attributes, read without the general field path.

graphql-core resolves every field alike: it builds a resolve info (a 15-field tuple in
Strawberry), calls Strawberry's resolver for a field without one (two calls that end in
`getattr`), asks whether the value is awaitable, and completes it through two levels of
`complete_value`. A manager's dashboard has some 10,000 such leaves (ids, counts,
percentiles) among its 13,000 fields.

`LeafExecutionContext.execute_field` reads such a field directly: the attribute, the null
check, the type's `coerce_output_value`, and on failure the same `handle_field_error` with
the same message graphql-core gives, so answers and errors are those of the general path
(tests/unit/test_attribute_leaves.py compares them). A field qualifies only if Strawberry
would resolve it by attribute (no resolver, no field extension: `is_basic_field`) and
graphql-core still calls Strawberry's default resolver for it (nothing wrapped it, as
input_strings.py wraps root fields). Everything else goes the general way: other fields, a
value that is awaitable or an exception, and every field of a request whose extensions
resolve fields (a middleware must see each one).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from graphql import (
    GraphQLLeafType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    is_leaf_type,
)
from graphql.execution.collect_fields import FieldDetailsList
from graphql.pyutils import Path, Undefined
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField


class AttributeLeaf(NamedTuple):
    attribute: str
    read: Callable[[Any, str], Any]
    field_type: GraphQLOutputType
    type: GraphQLLeafType
    non_null: bool


# Keyed by (object type name, field name); built once per schema.
Leaves = dict[tuple[str, str], AttributeLeaf]
_leaves_by_schema: weakref.WeakKeyDictionary[GraphQLSchema, Leaves] = weakref.WeakKeyDictionary()


def attribute_leaves(schema: GraphQLSchema) -> Leaves:
    """The fields of the schema that `LeafExecutionContext` reads directly."""
    found = _leaves_by_schema.get(schema)
    if found is not None:
        return found
    found = {}
    for named in schema.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name.startswith("__"):
            continue
        for name, field in named.fields.items():
            definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if not (
                isinstance(definition, StrawberryField)
                and definition.is_basic_field
                # Strawberry's own resolver for it, unwrapped.
                and getattr(field.resolve, "_is_default", False)
            ):
                continue
            non_null = isinstance(field.type, GraphQLNonNull)
            leaf = field.type.of_type if non_null else field.type
            if is_leaf_type(leaf):
                found[(named.name, name)] = AttributeLeaf(
                    definition.python_name, definition.default_resolver, field.type, leaf, non_null
                )
    _leaves_by_schema[schema] = found
    return found


class LeafExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Strawberry passes a middleware manager on every request, empty unless an
        # extension resolves fields; a middleware wraps every resolver, so then none is read
        # directly.
        manager = self.middleware_manager
        wrapped = manager is not None and bool(manager.middlewares)
        self._leaves = {} if wrapped else attribute_leaves(self.schema)

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        field_name = field_details_list[0].node.name.value
        leaf = self._leaves.get((parent_type.name, field_name))
        if leaf is None:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        result = leaf.read(source, leaf.attribute)
        if isinstance(result, Exception) or self.is_awaitable(result):
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        try:
            if result is None or result is Undefined:
                if leaf.non_null:
                    # graphql-core's own words (Executor.complete_value).
                    raise TypeError(
                        "Cannot return null for non-nullable field"
                        f" {parent_type.name}.{field_name}."
                    )
                return None
            return self.complete_leaf_value(leaf.type, result)
        except Exception as raw_error:
            self.handle_field_error(raw_error, leaf.field_type, field_details_list, path)
            return None
