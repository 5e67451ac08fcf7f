"""Every domain failure has an overload of from_failure, and maps to what it declares."""

from __future__ import annotations

import typing

from server.domain import failures
from server.graphql import errors

SAMPLES: list[failures.Failure] = [
    failures.NotPermitted("no"),
    failures.InvalidInput("bad", "field"),
    failures.NotFound("item", "7"),
    failures.QueueEmpty("kyc"),
    failures.StaleLease(1, decided_under_this_lease=True, decision_id=2),
    failures.EvidenceChanged(1, "0" * 64),
    failures.InvalidReasonCode("kyc", "code", "approve"),
    failures.AlreadySuperseded(1, None),
    failures.InvalidTransition(
        "exc_00000000000000000000",
        "closed",
        "reopen_exception",
        ("reopen_exception",),
        "not from here",
    ),
    failures.AlreadyQueued("exc_00000000000000000000", "key"),
    failures.LeaseLimitReached("kyc", 2, ()),
    failures.InvalidHoldReason("kyc", "code"),
    failures.NotLeased(1),
    failures.NotHeld(1),
    failures.NotAssigned(1),
    failures.ItemNotWaiting(1, "decided"),
    failures.ReauthenticationRequired(300, "mfa", None),
]


def _overloads() -> dict[type, type]:
    declared = {}
    for overload in typing.get_overloads(errors.from_failure):
        hints = typing.get_type_hints(overload)
        declared[hints["failure"]] = hints["return"]
    return declared


def test_every_failure_has_an_overload() -> None:
    assert set(_overloads()) == set(typing.get_args(failures.Failure))


def test_each_failure_maps_to_the_type_its_overload_declares() -> None:
    declared = _overloads()
    assert {type(sample) for sample in SAMPLES} == set(declared)
    for sample in SAMPLES:
        mapped = errors.from_failure(sample)
        assert type(mapped) is declared[type(sample)]
        assert mapped.message == sample.message
