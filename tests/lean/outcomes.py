"""What an answer was, in a word: the coverage the differential test reports."""

from __future__ import annotations

import json
from collections import Counter

from tests.lean.wire import Answer

# (document, outcome, variables' class) -> pairs compared; printed at the session's end.
COVERAGE: Counter[tuple[str, str, str]] = Counter()


def outcome(answer: Answer) -> str:
    """`200 claimNext:Claim`, `200 item:null`, `200 errors:BAD_REQUEST`,
    `503 errors:UNAVAILABLE`."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        return f"{answer.status} not JSON"
    parts = []
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, dict):
        for field, value in data.items():
            if isinstance(value, dict) and "__typename" in value:
                parts.append(f"{field}:{value['__typename']}")
            else:
                parts.append(f"{field}:{'null' if value is None else 'value'}")
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        codes = sorted({str((e.get("extensions") or {}).get("code")) for e in errors})
        parts.append("errors:" + ",".join(codes))
    return f"{answer.status} " + " ".join(parts)
