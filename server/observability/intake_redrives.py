"""The metric of redrives by broker (`casework intake`, server/intake/redrive.py).

Labels are bounded: `source` is a [[source]] name of the intake's configuration (or "none"
for a redrive with no intake message behind it), `outcome` one of RedriveOutcome."""

from __future__ import annotations

import enum

from prometheus_client import Counter

INTAKE_REDRIVES = Counter(
    "casework_intake_redrives",
    "Attempts at publishing a redrive back to the broker a message failed on, by intake "
    "source and what came of them.",
    ("source", "outcome"),
)

# The `source` label of a redrive whose exception no intake took (raised through the API).
NO_SOURCE = "none"


class RedriveOutcome(enum.StrEnum):
    # The broker confirmed the corrected message; the owning system reports the result.
    PUBLISHED = "published"
    # Failed; another attempt will be made.
    RETRIED = "retried"
    # Failed for good (nothing to publish, or the last attempt allowed): a person takes it.
    FAILED = "failed"
    # Published or failed, but a later attempt had taken over its lapsed lock: not recorded.
    SUPERSEDED = "superseded"


def record_intake_redrive(source: str | None, outcome: RedriveOutcome) -> None:
    INTAKE_REDRIVES.labels(source or NO_SOURCE, outcome.value).inc()
