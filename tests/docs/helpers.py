"""Reading the code blocks out of the project's markdown, so tests run what the docs say."""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def section(markdown: Path, heading: str) -> str:
    """The text under `heading` (a `## ` line, say) up to the next heading of its level."""
    text = markdown.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(rf"^{re.escape(level)} ", text[start:], re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


def code_blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def between(markdown: Path, first: str, stop: str) -> str:
    """The text from the heading `first` up to (not including) the heading `stop`."""
    text = markdown.read_text()
    start = text.index(f"\n{first}\n")
    return text[start : text.index(f"\n{stop}\n", start)]
