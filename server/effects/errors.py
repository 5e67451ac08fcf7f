"""How an effect reports failure. Anything else raised counts as transient."""

from __future__ import annotations


class TransientEffectError(Exception):
    """Worth trying again: the receiver was down, slow, or asked us to wait."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentEffectError(Exception):
    """Retrying cannot help: a person has to look at it."""


class GoneEffectError(PermanentEffectError):
    """The receiver answered 410 Gone: it asks not to be sent to again (Standard Webhooks).
    An event endpoint is disabled; a decision's effect fails for good, to a person."""
