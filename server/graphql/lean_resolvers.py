"""Methods without arguments, called straight from graphql-core.

Strawberry reaches a resolver method through about ten calls on every field: it builds its
Info, converts the (absent) arguments, lets the (absent) field extensions reshape them,
chains them with functools.reduce, and calls the method. A dashboard has some 3,000 such
fields (an item's `state` and `decisions`, a queue's figures). `lean_resolvers` gives each
field whose resolver is a synchronous method taking nothing but `self` and perhaps `info`
a resolver that calls the method directly, with the same `self` (the parent value) and the
same Info. Fields with arguments, field extensions, `root`/`parent` parameters, or async
resolvers keep Strawberry's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry
from graphql import GraphQLObjectType, GraphQLResolveInfo
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from server.graphql.strawberry_internals import graphql_schema_of


def _lean(definition: StrawberryField, info_class: Callable[..., Any]) -> Callable[..., Any] | None:
    resolver = definition.base_resolver
    if (
        resolver is None
        or resolver.is_async
        or definition.extensions
        or definition.arguments
        or resolver.self_parameter is None
        or resolver.root_parameter is not None
        or resolver.parent_parameter is not None
    ):
        return None
    method = resolver.wrapped_func
    if not callable(method):
        return None
    info_parameter = resolver.info_parameter
    if info_parameter is None:

        def without_info(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
            return method(source)

        return without_info
    name = info_parameter.name

    def with_info(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
        return method(source, **{name: info_class(_raw_info=info, _field=definition)})

    return with_info


def lean_resolvers(schema: strawberry.Schema) -> None:
    """Replaces the resolvers described above, on every object type but the roots (their
    resolvers are guarded: input_strings.py). Exception handlers wrap every resolver: a
    schema with any keeps Strawberry's."""
    if schema.exception_handlers:
        return
    graphql_schema = graphql_schema_of(schema)
    roots = {
        root.name
        for root in (
            graphql_schema.query_type,
            graphql_schema.mutation_type,
            graphql_schema.subscription_type,
        )
        if root is not None
    }
    info_class = schema.config.info_class
    for named in graphql_schema.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name in roots:
            continue
        for field in named.fields.values():
            definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if isinstance(definition, StrawberryField):
                lean = _lean(definition, info_class)
                if lean is not None:
                    field.resolve = lean
