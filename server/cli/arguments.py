"""Argument types of the `casework` command: each refuses a bad value in one line."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from server.domain.review.queues import QUEUE_NAME

if TYPE_CHECKING:
    pass


def workers(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, at least 1: {value!r}")
    return int(value)


def _positive_id(what: str, value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"a {what} id is a positive whole number: {value!r}")
    return int(value)


def token_id(value: str) -> int:
    return _positive_id("token", value)


def session_id(value: str) -> int:
    return _positive_id("session", value)


def item_id(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"an item id is a positive whole number: {value!r}")
    return int(value)


def moment(value: str) -> datetime:
    """An ISO-8601 date (midnight UTC) or date and time (UTC unless it says otherwise)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO date or date and time (2026-11-01, 2026-11-01T09:30:00Z): {value!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def user_name(value: str) -> str:
    if not 1 <= len(value.strip()) <= 200:
        raise argparse.ArgumentTypeError("a user name is 1 to 200 characters")
    return value.strip()


def revocation_reason(value: str) -> str:
    if not 1 <= len(value.strip()) <= 1000:
        raise argparse.ArgumentTypeError("a reason is 1 to 1000 characters")
    return value.strip()


def queue_name(value: str) -> str:
    if not QUEUE_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a queue name (a-z, 0-9, '_', '.', '-'; at most 63 characters)"
        )
    return value


MAX_EXPIRY_DAYS = 3650


def expiry_days(value: str) -> int:
    try:
        days = int(value)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_EXPIRY_DAYS:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of days from 1 to {MAX_EXPIRY_DAYS}: {value!r} "
            "(leave the option out for a token that never expires)"
        )
    return days
