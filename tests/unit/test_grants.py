"""Choosing the grant a request acts under, and the queues a grant's patterns name."""

from __future__ import annotations

import pytest

from server.domain.identity.grants import NoAccess, RoleNotHeld, active_grant, queue_names
from server.domain.model import Grant, Principal, Role

KYC = Grant(Role.REVIEWER, ("kyc*",), ("kyc reviewers",))
APPROVER = Grant(Role.APPROVER, ("kyc-exceptions",), ("approvers",))
KNOWN = ["kyc", "kyc-senior", "fraud", "payouts"]


def test_patterns_name_the_known_queues_they_match() -> None:
    assert queue_names(["kyc*"], KNOWN) >= {"kyc", "kyc-senior"}
    assert "fraud" not in queue_names(["kyc*"], KNOWN)
    assert queue_names(["kyc?senior", "f[ar]aud"], KNOWN) >= {"kyc-senior", "fraud"}


def test_a_plain_name_stands_for_itself_made_yet_or_not() -> None:
    assert queue_names(["refunds"], KNOWN) == {"refunds"}


def test_a_pattern_that_matches_no_queue_covers_no_queue_for_any_role() -> None:
    queues = queue_names(["pay-eu*"], KNOWN)
    manager = Principal("mia", Role.MANAGER, queues)

    # An empty set would mean "every queue" for a manager: the pattern itself stays in.
    assert queues
    assert not any(manager.works_in(queue) for queue in KNOWN)
    assert manager.queue_scope() == ["pay-eu*"]
    # What a person is shown (me.queues) names queues only.
    assert manager.named_queues() == []
    assert Principal("rita", Role.REVIEWER, queue_names(["kyc*"], KNOWN)).named_queues() == [
        "kyc",
        "kyc-senior",
    ]


def test_the_first_grant_is_the_default() -> None:
    assert active_grant((KYC, APPROVER), None) is KYC


def test_a_held_role_is_chosen() -> None:
    assert active_grant((KYC, APPROVER), "approver") is APPROVER


def test_a_role_not_held_is_refused_with_the_roles_held() -> None:
    with pytest.raises(RoleNotHeld) as refused:
        active_grant((KYC, APPROVER), "admin")
    assert str(refused.value) == "you do not hold the role 'admin' (your roles: reviewer, approver)"


def test_no_grant_at_all_is_no_access() -> None:
    with pytest.raises(NoAccess):
        active_grant((), None)
