"""Evidence pinning: the canonical form of a payload and its hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_PAYLOAD_BYTES = 64 * 1024


def canonical_json(payload: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same payload always gives the same bytes."""
    return json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def evidence_hash(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload)).hexdigest()
