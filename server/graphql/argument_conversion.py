"""Strawberry's conversion of a field's arguments, planned once per field.

Before every resolver with arguments, Strawberry turns graphql-core's coerced values into
Python ones (`convert_arguments`): for each argument and, recursively, each field of an
input object, it asks again what the type is (Maybe, Optional, list, scalar, enum, lazy,
input object), converts each field's name, and resolves each field's type. The answer is
the same on every request, yet it was a tenth of a claim+decide cycle's CPU
(bench/request_cost.py). `convert_arguments` here asks once, the first time a field's
arguments are converted, and keeps the plan: a converter per type that does only what
Strawberry's would for that type, in the same order, building the same objects.

A type whose conversion does more than this (a Maybe, a GlobalID, an input type with its
own `from_input`, anything Strawberry refuses) makes the whole field keep Strawberry's own
conversion, so its values and its errors stay Strawberry's. `install` puts the function
where Strawberry's resolver wrapper calls it (server/graphql/strawberry_internals.py names
that reliance).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING
from typing import Any

from strawberry.relay.types import GlobalID
from strawberry.schema.config import StrawberryConfig
from strawberry.types import arguments as strawberry_arguments
from strawberry.types.arguments import StrawberryArgument
from strawberry.types.base import (
    StrawberryList,
    StrawberryMaybe,
    StrawberryOptional,
    has_object_definition,
)
from strawberry.types.enum import StrawberryEnumDefinition, has_enum_definition
from strawberry.types.lazy_type import LazyType
from strawberry.types.unset import UNSET

Converter = Callable[[Any], Any]
Registry = Mapping[object, Any]

strawberry_convert_arguments = strawberry_arguments.convert_arguments


class _Unplanned(Exception):
    """A type this module leaves to Strawberry's conversion."""


def _identity(value: Any) -> Any:
    return value


def _is_leaf(type_: Any, registry: Registry) -> bool:
    """Strawberry's `_is_leaf_type`, GlobalID left out (it is never planned)."""
    if type_ is GlobalID:
        raise _Unplanned
    return bool(strawberry_arguments._is_leaf_type(type_, registry))


def _plan(type_: Any, registry: Registry, config: StrawberryConfig) -> Converter:
    """The converter of a value of `type_`, as convert_argument treats it."""
    if isinstance(type_, StrawberryMaybe):
        raise _Unplanned
    if isinstance(type_, StrawberryOptional):
        # Strawberry unwraps first, then answers None and UNSET as themselves.
        return _plan(type_.of_type, registry, config)
    if isinstance(type_, StrawberryList):
        return _nullable(_list(type_, registry, config))
    if _is_leaf(type_, registry):
        return _identity
    if isinstance(type_, LazyType):
        return _plan(type_.resolve_type(), registry, config)
    if has_enum_definition(type_):
        definition: StrawberryEnumDefinition = type_.__strawberry_definition__
        return _plan(definition, registry, config)
    if has_object_definition(type_):
        return _nullable(_input_object(type_, registry, config))
    raise _Unplanned


def _nullable(convert: Converter) -> Converter:
    def nullable(value: Any) -> Any:
        if value is None or value is UNSET:
            return value
        return convert(value)

    return nullable


def _list(type_: StrawberryList, registry: Registry, config: StrawberryConfig) -> Converter:
    item = type_.of_type
    if item is GlobalID or (isinstance(item, StrawberryOptional) and item.of_type is GlobalID):
        raise _Unplanned
    optional_leaf = isinstance(item, StrawberryOptional) and _is_leaf(item.of_type, registry)
    if _is_leaf(item, registry) or optional_leaf:
        # A copy: graphql-core gives every request that omits the value the same default.
        return list
    convert_item = _plan(item, registry, config)

    def convert_list(value: Any) -> Any:
        return [convert_item(x) for x in value]

    return convert_list


def _input_object(type_: Any, registry: Registry, config: StrawberryConfig) -> Converter:
    definition = type_.__strawberry_definition__
    if definition.from_input is not None:
        raise _Unplanned
    implicit: dict[str, Any] = {}
    if definition.is_input:
        implicit = {
            field.python_name: None
            for field in definition.fields
            if field.default_value is MISSING and field.default_factory is MISSING
        }
    fields = [
        (
            config.name_converter.from_field(field),
            field.python_name,
            _plan(field.resolve_type(type_definition=definition), registry, config),
        )
        for field in definition.fields
    ]

    def convert_object(value: Any) -> Any:
        kwargs = dict(implicit)
        for graphql_name, python_name, convert in fields:
            if graphql_name in value:
                kwargs[python_name] = convert(value[graphql_name])
        return type_(**kwargs)

    return convert_object


class _Plan:
    """One field's arguments: Strawberry's objects it was made for, and how to convert."""

    def __init__(
        self,
        arguments: list[StrawberryArgument],
        registry: Registry,
        config: StrawberryConfig,
    ) -> None:
        self.arguments = arguments
        self.registry = registry
        self.config = config
        self.steps: list[tuple[str, str, Converter]] | None
        try:
            self.steps = [
                (
                    config.name_converter.from_argument(argument),
                    _python_name(argument),
                    _plan(argument.type, registry, config),
                )
                for argument in arguments
            ]
        except _Unplanned:
            self.steps = None

    def made_for(
        self, arguments: list[StrawberryArgument], registry: Registry, config: StrawberryConfig
    ) -> bool:
        return self.arguments is arguments and self.registry is registry and self.config is config


def _python_name(argument: StrawberryArgument) -> str:
    assert argument.python_name
    return argument.python_name


# Keyed by id(arguments); each plan keeps its list alive, so an id is never reused under it.
_plans: dict[int, _Plan] = {}


def convert_arguments(
    value: dict[str, Any],
    arguments: list[StrawberryArgument],
    scalar_registry: Registry,
    config: StrawberryConfig,
    info: Any = None,
) -> dict[str, Any]:
    """Strawberry's convert_arguments, with the same parameters and the same result."""
    if not arguments:
        return {}
    plan = _plans.get(id(arguments))
    if plan is None or not plan.made_for(arguments, scalar_registry, config):
        plan = _plans[id(arguments)] = _Plan(arguments, scalar_registry, config)
    steps = plan.steps
    if steps is None:
        return strawberry_convert_arguments(
            value, arguments, scalar_registry=scalar_registry, config=config, info=info
        )
    kwargs: dict[str, Any] = {}
    for name, python_name, convert in steps:
        if name in value:
            kwargs[python_name] = convert(value[name])
    return kwargs


def planned(arguments: list[StrawberryArgument]) -> bool:
    """Whether these arguments were converted by a plan (False: by Strawberry's)."""
    plan = _plans.get(id(arguments))
    return plan is not None and plan.arguments is arguments and plan.steps is not None


def install() -> None:
    """Strawberry's resolver wrapper converts through this module from now on."""
    from strawberry.schema import schema_converter

    setattr(schema_converter, "convert_arguments", convert_arguments)  # noqa: B010
