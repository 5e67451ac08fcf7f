"""The CSV cells of a search export (server/search_csv.py): text a spreadsheet never runs as
a formula, plain values, a file name that says when."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta, timezone

import pytest

from server.search_csv import encode_rows, export_filename, guarded


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("=SUM(1,2)", "'=SUM(1,2)"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@cmd", "'@cmd"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("app-7731", "app-7731"),
        ("'quoted", "'quoted"),
        ("", ""),
        (" =padded", " =padded"),
    ],
)
def test_text_that_starts_a_formula_gets_an_apostrophe(text: str, written: str) -> None:
    assert guarded(text) == written


def test_cells_read_back_as_plain_values() -> None:
    when = datetime(2026, 10, 1, 11, 30, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    data = encode_rows(
        [["Item ID", "Note"], [7, "=1+1"], [-5, None], [True, when], [False, 'say "hi",\nbye']]
    )

    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))

    assert rows == [
        ["Item ID", "Note"],
        ["7", "'=1+1"],
        ["-5", ""],
        ["true", "2026-10-01T09:30:00.000005Z"],
        ["false", 'say "hi",\nbye'],
    ]
    assert data.endswith(b"\r\n")


def test_the_file_name_says_what_and_when_in_utc() -> None:
    now = datetime(2026, 10, 1, 9, 30, 5, 123, tzinfo=UTC)

    assert export_filename("items", now) == "casework-items-20261001T093005Z.csv"
    assert export_filename("decisions", now.astimezone(timezone(timedelta(hours=-7)))) == (
        "casework-decisions-20261001T093005Z.csv"
    )
