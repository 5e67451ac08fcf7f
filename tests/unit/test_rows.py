"""Records read from rows by their fields' names (server/domain/rows.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from server.domain.rows import FromRow, from_row


@dataclass(frozen=True)
class _Record:
    id: int
    name: str
    kind: str
    note: str | None = None


@dataclass(frozen=True)
class _Plain(FromRow):
    id: int
    name: str


def test_each_field_is_the_column_of_its_name_unless_given() -> None:
    row = {"id": 7, "name": "kyc", "kind": "REVIEW", "note": None, "other": "ignored"}

    record = from_row(_Record, row, kind=str(row["kind"]).lower())

    assert record == _Record(7, "kyc", "review", None)


def test_a_missing_column_is_a_key_error_unless_it_is_optional() -> None:
    row = {"id": 7, "name": "kyc", "kind": "review"}

    with pytest.raises(KeyError, match="note"):
        from_row(_Record, row)
    assert from_row(_Record, row, optional=("note",)).note is None
    assert from_row(_Record, {**row, "note": "n"}, optional=("note",)).note == "n"


def test_a_given_value_that_is_no_field_is_refused() -> None:
    with pytest.raises(TypeError, match="nam"):
        from_row(_Record, {"id": 7, "name": "kyc", "kind": "review", "note": None}, nam="x")


def test_a_record_of_columns_only_reads_itself() -> None:
    assert _Plain.from_row({"id": 1, "name": "aml"}) == _Plain(1, "aml")
