"""Text that goes into storage: how long a field may be, and how a stranger's text is cut.

Two kinds of text reach the tables. What a client writes (a note, a detail, a label) is
checked and refused when it is too long: the client can shorten it. What a receiver or a
handler answered (a response body, an exception message) cannot be refused, since nobody is
there to shorten it, so it is made storable and cut to size instead.
"""

from __future__ import annotations

from server.domain.failures import InvalidInput

# A note, a detail, a reason: enough for a paragraph or two, not a document store.
MAX_TEXT = 4000
MAX_LABEL = 200

# What a receiver answered is kept at most this many characters: enough to tell what went
# wrong, not a place to keep a receiver's documents. Applications, apply attempts and
# redrive deliveries alike; the CHECK constraints of migrations 0004 and 0006 hold the
# attempts' and deliveries' columns to the same bound.
RECEIVER_TEXT_LIMIT = 1000
TRUNCATED_MARK = " [truncated]"


def check_text(
    value: str | None, field: str, *, required: bool, limit: int = MAX_TEXT
) -> InvalidInput | None:
    """A client's free text: refused when required and blank, or longer than the limit."""
    if value is None or not value.strip():
        return InvalidInput(f"{field} is required", field) if required else None
    if len(value) > limit:
        return InvalidInput(f"{field} is at most {limit} characters", field)
    return None


def check_label(label: str, field: str = "label") -> InvalidInput | None:
    """A display name for a catalogue entry (a reason code, a workflow reason)."""
    if not 1 <= len(label.strip()) <= MAX_LABEL:
        return InvalidInput(f"a label is 1 to {MAX_LABEL} characters", field)
    return None


def storable(text: str | None) -> str | None:
    """PostgreSQL text holds no NUL character. An error or note comes from the receiver or a
    handler (a response body, an exception message): one with a NUL would make recording the
    attempt fail, every time, and the decision would be retried forever, never recorded.
    A longer one is cut to RECEIVER_TEXT_LIMIT characters, marked as cut."""
    if text is None:
        return None
    text = text.replace("\x00", "\ufffd")
    if len(text) <= RECEIVER_TEXT_LIMIT:
        return text
    return text[: RECEIVER_TEXT_LIMIT - len(TRUNCATED_MARK)] + TRUNCATED_MARK


def clipped(text: str, limit: int = MAX_TEXT) -> str:
    """Casework's own text built around a stranger's (an exception's detail, a redrive's
    answer): cut to what a client could have written in the same field."""
    return text[:limit]
