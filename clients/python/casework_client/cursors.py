"""Where decision_events keeps its place: the id of the last decision the handler finished,
per stream. Any object with these two coroutines will do (a table in your own database, so
that the cursor commits with the work it records, is the strongest choice)."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Protocol


class CursorStore(Protocol):
    async def load(self, stream: str) -> str | None:
        """The cursor saved for `stream`; None when nothing was processed yet."""
        ...

    async def save(self, stream: str, cursor: str) -> None:
        """Durably records `cursor` for `stream` before returning."""
        ...


class MemoryCursorStore:
    """Cursors in memory: for a process that may start over from "now" after a restart."""

    def __init__(self) -> None:
        self.cursors: dict[str, str] = {}

    async def load(self, stream: str) -> str | None:
        return self.cursors.get(stream)

    async def save(self, stream: str, cursor: str) -> None:
        self.cursors[stream] = cursor


class FileCursorStore:
    """Cursors in one JSON file, replaced atomically (written beside it, flushed to disk,
    then renamed over it): a crash leaves the old cursor or the new one, never a torn file.
    One process per file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    async def load(self, stream: str) -> str | None:
        return (await asyncio.to_thread(self._read)).get(stream)

    async def save(self, stream: str, cursor: str) -> None:
        await asyncio.to_thread(self._write, stream, cursor)

    def _read(self) -> dict[str, str]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{self.path} does not hold a JSON object of cursors")
        return {str(key): str(value) for key, value in data.items()}

    def _write(self, stream: str, cursor: str) -> None:
        cursors = self._read()
        cursors[stream] = cursor
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(cursors, out, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
