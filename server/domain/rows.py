"""Records read from database rows whose columns are named as the records' fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from server.store.database import Row

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls) if field.init)


def from_row(cls: type[R], row: Row, /, *, optional: tuple[str, ...] = (), **given: Any) -> R:
    """A `cls` whose fields are the row's columns of their names, except those `given` (a
    conversion, a column of another name, a value from elsewhere). An `optional` column may
    be absent (a statement that does not select it): its field is None then. Any other
    missing column is a KeyError, as `row[name]` is."""
    values = {
        name: row.get(name) if name in optional else row[name]
        for name in _fields(cls)
        if name not in given
    }
    return cls(**values, **given)


def grouped(
    keys: Iterable[K], column: str, rows: Iterable[Row], record: Callable[[Row], T]
) -> dict[K, list[T]]:
    """The records of the rows whose `column` is each key, in the rows' order; an empty list
    for a key no row has (a batched read answers for every key it was asked about)."""
    found: dict[K, list[T]] = {key: [] for key in keys}
    for row in rows:
        found[row[column]].append(record(row))
    return found


def seconds(value: Any) -> float | None:
    """A duration as SQL gives it (numeric, double precision or NULL), in float seconds."""
    return None if value is None else float(value)


class FromRow:
    """A dataclass record every field of which is the column of its name."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_row(cls, row: Row) -> Self:
        return from_row(cls, row)
