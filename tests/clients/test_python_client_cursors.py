"""FileCursorStore: one cursor per stream in one file, read back by a new instance (a
restarted process), replaced whole: no temporary file left beside it, and a file that is
not a JSON object of cursors is an error, never a silent fresh start."""

from __future__ import annotations

from pathlib import Path

import pytest
from casework_client import FileCursorStore, MemoryCursorStore


async def test_cursors_survive_a_new_store_per_stream(tmp_path: Path) -> None:
    path = tmp_path / "state" / "cursors.json"
    store = FileCursorStore(path)
    assert await store.load("decisionEvents:kyc") is None
    await store.save("decisionEvents:kyc", "41")
    await store.save("decisionEvents:payouts", "7")
    await store.save("decisionEvents:kyc", "42")

    reopened = FileCursorStore(path)
    assert await reopened.load("decisionEvents:kyc") == "42"
    assert await reopened.load("decisionEvents:payouts") == "7"
    assert [entry.name for entry in path.parent.iterdir()] == ["cursors.json"]


async def test_a_file_that_is_not_a_cursor_map_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "cursors.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        await FileCursorStore(path).load("decisionEvents:kyc")


async def test_the_memory_store() -> None:
    store = MemoryCursorStore()
    await store.save("decisionEvents:kyc", "3")
    assert await store.load("decisionEvents:kyc") == "3"
    assert await store.load("decisionEvents:other") is None
