"""JSON on the wire: orjson, with the standard library for what orjson refuses.

orjson encodes and decodes several times faster than `json`, which showed in every
request's CPU. It differs from `json` on a few inputs, and for those the standard library
does the work, so the answer is the same as before, only slower:
- it refuses to encode integers beyond 64 bits (a payload may hold one: jsonb keeps any
  precision);
- it refuses to decode lone surrogates in strings (input_strings.py refuses those with a
  typed error, which it can only do once the body has parsed), NaN and infinities;
- it decodes an integer beyond 64 bits as a float, silently losing digits. Such an
  integer has at least 19 digits in a row, so a text with a run of 19 digits anywhere
  (in a string too: that costs only speed) is decoded by `json`.
"""

from __future__ import annotations

import json
import re

import orjson

# 2**63 has 19 digits: a shorter run of digits is an integer orjson keeps exactly.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def dumps(data: object) -> str:
    """Compact JSON text, as json.dumps(data, separators=(",", ":")) writes it."""
    try:
        return orjson.dumps(data).decode()
    except TypeError:
        # orjson.JSONEncodeError is a TypeError: an integer beyond 64 bits, for one.
        return json.dumps(data, separators=(",", ":"))


def loads(data: str | bytes) -> object:
    """Parses like json.loads, raising json.JSONDecodeError on a body that is not JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)
