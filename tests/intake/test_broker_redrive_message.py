"""The message a broker redrive publishes: the original JSON with the approved correction
merged in (RFC 7396 JSON merge patch), or the whole message the correction gives; which of
the original's headers go with it; and the origin read back from the intake's record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.intake.redrive import (
    Unpublishable,
    carried_headers,
    corrected_message,
    merge_patch,
    origin_of,
)
from server.intake.sources import BrokerKind, Origin

# RFC 7396, appendix A: every example, as (target, patch, result).
RFC_7396_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_7396_EXAMPLES)
def test_merge_patch_gives_every_result_of_the_rfc(target: Any, patch: Any, result: Any) -> None:
    before = json.dumps(target)
    assert merge_patch(target, patch) == result
    # The original is left as it was (it is read again on a retry).
    assert json.dumps(target) == before


def test_the_correction_is_merged_into_the_original_keeping_its_order() -> None:
    original = json.dumps(
        {"supplierId": "SUP-1042", "legalName": "Acme Trading Ltd", "bank": {"iban": "GB1"}}
    ).encode()
    changes = {"legalName": "Acme Holdings Ltd", "bank": {"bic": "ABCDGB2L"}, "note": None}

    message = corrected_message(original, changes)

    assert message == (
        b'{"supplierId":"SUP-1042","legalName":"Acme Holdings Ltd",'
        b'"bank":{"iban":"GB1","bic":"ABCDGB2L"}}'
    )


def test_text_outside_ascii_is_published_as_utf8() -> None:
    message = corrected_message('{"name":"Zoë"}'.encode(), {"city": "Malmö"})
    assert message.decode("utf-8") == '{"name":"Zoë","city":"Malmö"}'


@pytest.mark.parametrize(
    ("whole", "published"),
    [
        (
            {"supplierId": "SUP-1042", "legalName": "Acme Holdings Ltd"},
            b'{"supplierId":"SUP-1042","legalName":"Acme Holdings Ltd"}',
        ),
        ("<supplier id='SUP-1042'/>", b"<supplier id='SUP-1042'/>"),
        ([1, 2], b"[1,2]"),
    ],
)
@pytest.mark.parametrize("original", [None, b"\xff\xfe not json", b'{"kept": true}'])
def test_a_whole_message_replaces_whatever_the_original_was(
    whole: Any, published: bytes, original: bytes | None
) -> None:
    assert corrected_message(original, {"$replace": whole}) == published


def test_replace_beside_other_members_is_an_ordinary_change() -> None:
    changes = {"$replace": "x", "legalName": "Acme Holdings Ltd"}
    assert json.loads(corrected_message(b'{"a":1}', changes)) == {"a": 1, **changes}


@pytest.mark.parametrize(
    ("original", "why"),
    [
        (None, "the original message was not kept"),
        (b"<supplier id='SUP-1042'/>", "the original message is not JSON"),
        (b"\xff\xfe", "the original message is not JSON"),
    ],
)
def test_changes_without_an_original_to_merge_into_cannot_be_published(
    original: bytes | None, why: str
) -> None:
    with pytest.raises(Unpublishable) as refused:
        corrected_message(original, {"legalName": "Acme Holdings Ltd"})
    assert str(refused.value).startswith(why)
    assert '{"$replace": ...}' in str(refused.value)


def test_the_broker_s_failure_record_and_casework_s_markers_stay_behind() -> None:
    original = {
        "source-record-id": "SUP-1042",
        "Tenant": "eu",
        "attempt": 3,
        "urgent": True,
        "x-death": [{"count": 1, "queue": "work"}],
        "x-first-death-queue": "work",
        "X-Last-Death-Reason": "rejected",
        "x-delivery-count": 2,
        "Nats-Msg-Id": "old-id",
        "Casework-Redrive-Key": "stale",
        "Casework-Park-Reason": "unmappable",
        "nested": {"a": 1},
    }
    assert carried_headers(original) == {
        "source-record-id": "SUP-1042",
        "Tenant": "eu",
        "attempt": "3",
        "urgent": "true",
    }


def test_the_origin_is_read_back_as_the_intake_recorded_it() -> None:
    for origin in (
        Origin(BrokerKind.RABBITMQ, exchange="orders", routing_key="order.created"),
        Origin(BrokerKind.RABBITMQ, exchange="", routing_key="work"),
        Origin(BrokerKind.NATS, subject="orders.created", stream="ORDERS"),
        Origin(BrokerKind.SQS, queue="https://sqs.local/123/orders"),
    ):
        assert origin_of(origin.as_json()) == origin


@pytest.mark.parametrize("stored", [{}, {"broker": "kafka", "subject": "x"}])
def test_an_origin_of_no_known_broker_cannot_be_published_to(stored: dict[str, Any]) -> None:
    with pytest.raises(Unpublishable, match="no known broker"):
        origin_of(stored)
