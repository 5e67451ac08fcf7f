"""Loops that wait for the database while it is away, and say so once.

An outage is a state, not an error per retry: the log gets one line when it is noticed and
one when the database answers again, however many loops wait and however often they retry.
A failure that is not an outage (`is_unavailable` says no) is a bug, and stays the caller's
to raise or log in full.
"""

from __future__ import annotations

import logging
import random
import time

from server.store.errors import is_unavailable

BACKOFF_FIRST_SECONDS = 0.2
BACKOFF_MAX_SECONDS = 5.0


def describe(error: BaseException) -> str:
    """One line for the log: the error and what caused it, without a traceback."""
    text = f"{type(error).__name__}: {error}".strip()
    cause = error.__cause__ or error.__context__
    if cause is not None and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text.splitlines()[0] if text else type(error).__name__


class OutageLog:
    """Shared by every loop of one kind: a line when the first loses the database, and one
    when the last that lost it has it back."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self._log = log
        self._what = what
        self._down = 0

    @property
    def waiting(self) -> int:
        return self._down

    def _lost(self, error: BaseException) -> None:
        self._down += 1
        if self._down == 1:
            self._log.warning(
                "%s: the database is unavailable (%s); waiting for it, retrying with backoff",
                self._what,
                describe(error),
            )

    def _back(self, *, quietly: bool) -> None:
        self._down -= 1
        if self._down == 0 and not quietly:
            # At the level of the loss, so that whoever sees one line sees the other.
            self._log.warning("%s: the database is back; resuming", self._what)


class Retrying:
    """One loop's part in an outage: its capped, jittered backoff and its share of the log.

    `failed` for each error (False: not an outage, the caller's to handle), `succeeded` once
    the database answered, `abandon` when the loop ends without having seen it back.
    """

    def __init__(self, outage: OutageLog) -> None:
        self._outage = outage
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._failures > 0

    def failed(self, error: BaseException) -> bool:
        if not is_unavailable(error):
            return False
        if self._failures == 0:
            self._outage._lost(error)
        self._failures += 1
        return True

    def delay(self) -> float:
        """How long to wait before the next attempt, after `failed`."""
        base = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2.0 ** (self._failures - 1))
        return base * random.uniform(0.5, 1.0)

    def succeeded(self) -> None:
        if self._failures:
            self._failures = 0
            self._outage._back(quietly=False)

    def abandon(self) -> None:
        if self._failures:
            self._failures = 0
            self._outage._back(quietly=True)


# Loggers of other code that logs a traceback per attempt while the database is away: the
# pool's floor maintenance (asyncpg, backoff up to 60 s) and the apply worker's attempts
# that cannot be recorded (its claiming loop backs off with Retrying).
CHATTY_LOGGERS = ("asyncpg.pool", "casework.worker")
# A repeat of an outage line this soon after the last is left out; the longest gap between
# attempts among those loggers is asyncpg's 60 s backoff.
REPEAT_WITHIN_SECONDS = 70.0


class OutageLines(logging.Filter):
    """On a logger that logs each failed attempt with a traceback: the first attempt of an
    outage becomes one line, and its repeats are left out while the outage lasts. Records
    that are not about an outage pass untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._last: float | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or not is_unavailable(error):
            return True
        now = time.monotonic()
        repeated = self._last is not None and now - self._last < REPEAT_WITHIN_SECONDS
        self._last = now
        if repeated:
            return False
        record.msg = (
            f"{record.getMessage()}: the database is unavailable ({describe(error)}); "
            "repeats are left out while it stays away"
        )
        record.args = None
        record.exc_info = None
        record.exc_text = None
        return True


def quiet_outage_tracebacks(names: tuple[str, ...] = CHATTY_LOGGERS) -> None:
    """Installs OutageLines on each named logger, once."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, OutageLines) for existing in logger.filters):
            logger.addFilter(OutageLines())
