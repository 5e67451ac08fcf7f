"""The canonical form of a payload, and the hash a decision must echo."""

from __future__ import annotations

import hashlib

import pytest

from server.domain.review.evidence import canonical_json, evidence_hash


def test_keys_are_sorted_at_every_depth() -> None:
    payload = {"b": 1, "a": {"z": [3, {"y": 2, "x": 1}], "c": None}}

    assert canonical_json(payload) == b'{"a":{"c":null,"z":[3,{"x":1,"y":2}]},"b":1}'


def test_no_whitespace() -> None:
    assert canonical_json({"a": [1, 2], "b": "x y"}) == b'{"a":[1,2],"b":"x y"}'


def test_non_ascii_is_kept_as_utf8() -> None:
    assert canonical_json({"name": "Zoë Ωmega 東京"}) == '{"name":"Zoë Ωmega 東京"}'.encode()
    assert b"\\u" not in canonical_json({"name": "Zoë"})


def test_the_hash_ignores_key_order() -> None:
    assert evidence_hash({"a": 1, "b": {"c": 2, "d": 3}}) == evidence_hash(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )


def test_the_hash_is_sha256_of_the_canonical_form() -> None:
    assert evidence_hash({}) == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    payload = {"name": "Zoë", "score": 0.5}
    assert evidence_hash(payload) == hashlib.sha256(canonical_json(payload)).hexdigest()


def test_the_hash_sees_every_value() -> None:
    hashes = {
        evidence_hash(p)
        for p in ({"a": 1}, {"a": "1"}, {"a": 1.5}, {"a": [1]}, {"a": None}, {"A": 1})
    }
    assert len(hashes) == 6


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused(number: float) -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_json({"score": number})
