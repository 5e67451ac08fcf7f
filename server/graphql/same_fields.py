"""One record built from another whose fields carry the same names: a GraphQL figure from
the domain's, a domain request from a GraphQL input. Where a field is renamed or converted,
the mapping stays written out beside the type instead."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def copied(target: type[T], source: Any) -> T:
    """A `target` (a dataclass, as every Strawberry type is) whose every field is the
    attribute of `source` of its name: a field `source` lacks fails here, not later."""
    fields = dataclasses.fields(target)
    return target(**{field.name: getattr(source, field.name) for field in fields if field.init})
