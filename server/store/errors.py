"""Database errors the domain layer can act on, free of driver types."""

from __future__ import annotations


class IntegrityViolation(Exception):
    """A constraint refused a write; `constraint` names it as in the migrations."""

    def __init__(self, kind: str, constraint: str | None, detail: str) -> None:
        super().__init__(f"{kind} on {constraint}: {detail}")
        self.kind = kind
        self.constraint = constraint
        self.detail = detail


class DatabaseUnavailable(Exception):
    pass
