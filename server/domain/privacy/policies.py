"""Attaching a payload policy to a queue (an admin's), as a new version each time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Role
from server.domain.privacy.policy import (
    DEFAULT_REVEAL_ROLES,
    DEFAULT_VISIBLE,
    FieldClass,
    PrivacyPolicy,
    Unlisted,
    check_paths,
)
from server.domain.review.queues import admin_refusal, require_queue
from server.store import sql
from server.store.database import Database


@dataclass(frozen=True)
class PolicyInput:
    fields: Mapping[str, FieldClass]
    unlisted: Unlisted = Unlisted.DROP
    # Classes each role sees without a reveal; None: DEFAULT_VISIBLE. A role left out sees
    # none of the encrypted classes.
    visible: Mapping[Role, Sequence[FieldClass]] | None = None
    reveal_roles: Sequence[Role] | None = None
    retention_class: str | None = None


async def set_privacy_policy(
    db: Database, principal: Principal, queue: str, policy: PolicyInput
) -> PrivacyPolicy | NotPermitted | InvalidInput:
    if refusal := admin_refusal(principal, "set a queue's privacy policy", queue):
        return refusal
    if problem := check_paths(policy.fields):
        return problem
    visible = (
        DEFAULT_VISIBLE
        if policy.visible is None
        else {role: frozenset(classes) for role, classes in policy.visible.items()}
    )
    if any(FieldClass.SENSITIVE in c or FieldClass.SECRET in c for c in visible.values()):
        return InvalidInput(
            "sensitive values are shown only when revealed, and secrets never: leave both out "
            "of `visible`",
            "visible",
        )
    target = await require_queue(db, principal, queue)
    if isinstance(target, NotPermitted | InvalidInput):
        return target
    if policy.retention_class is not None and not await db.fetch(
        sql.privacy.RETENTION_CLASS_EXISTS, name=policy.retention_class
    ):
        return InvalidInput(f"unknown retention class {policy.retention_class!r}", "retentionClass")
    proposed = PrivacyPolicy(
        queue=queue,
        version=0,
        fields=dict(policy.fields),
        unlisted=policy.unlisted,
        visible=visible,
        reveal_roles=frozenset(policy.reveal_roles)
        if policy.reveal_roles is not None
        else DEFAULT_REVEAL_ROLES,
        retention_class=policy.retention_class,
    )
    row = await db.fetchrow(
        sql.privacy.POLICY_INSERT_NEXT,
        queue=queue,
        fields=proposed.stored_fields(),
        unlisted=proposed.unlisted.value,
        visible=proposed.stored_visible(),
        reveal_roles=sorted(role.value for role in proposed.reveal_roles),
        retention_class=proposed.retention_class,
        **principal.actor(),
    )
    assert row is not None  # the queue exists: require_queue found it
    return PrivacyPolicy.from_row(row)


async def policies_by_queues(db: Database, queues: list[str]) -> dict[str, PrivacyPolicy]:
    """The policy in force on each of these queues that has one: one statement for a page of
    queues (Queue.privacyPolicy's loader)."""
    rows = await db.fetch(sql.privacy_policy.POLICIES_CURRENT_BY_QUEUES, queues=queues)
    return {row["queue"]: PrivacyPolicy.from_row(row) for row in rows}
