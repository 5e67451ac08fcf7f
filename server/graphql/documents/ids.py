"""A trusted document's id: `sha256:` and the hex SHA-256 of its text, as sent."""

from __future__ import annotations

import hashlib

PREFIX = "sha256:"


def document_id(text: str) -> str:
    return PREFIX + hashlib.sha256(text.encode()).hexdigest()


def hash_of(identifier: str) -> str | None:
    """The hex hash of a `sha256:<hex>` id; None for any other form."""
    if not identifier.startswith(PREFIX):
        return None
    digest = identifier.removeprefix(PREFIX)
    if len(digest) != 64 or digest.strip("0123456789abcdef"):
        return None
    return digest
