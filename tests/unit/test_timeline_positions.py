"""A timeline cursor's position: written and read back exactly, and anything else refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from server.domain.timeline.events import Position


@pytest.mark.parametrize(
    "position",
    [
        Position(datetime(2026, 12, 1, 14, 57, 11, 739365, tzinfo=UTC), 30, 984027852753625322),
        Position(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), 10, 1),
        Position(datetime(2026, 1, 1, tzinfo=UTC), 21, 0),
    ],
)
def test_a_position_reads_back_as_written(position: Position) -> None:
    assert Position.parse(str(position)) == position


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1.2",
        "1.2.3.4",
        "a.b.c",
        "1.2.3 ",
        "1.2.+3",
        "1.2.9223372036854775808",
        "1.2147483648.3",
        "9999999999999999999.1.1",
        "1.2.3\n",
        "\u0661.\u0662.\u0663",  # Arabic-Indic digits: digits, not ASCII ones
    ],
)
def test_anything_else_is_no_position(text: str) -> None:
    assert Position.parse(text) is None
