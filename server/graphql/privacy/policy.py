"""setPrivacyPolicy, defineRetentionClass and retentionClasses: the admin side of a queue's
payload policy. Parse, call the domain, map the result."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain import failures
from server.domain.failures import is_failure
from server.domain.privacy import policies, retention_classes
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotPermitted, from_failure
from server.graphql.privacy.types import (
    FieldClass,
    PrivacyPolicy,
    RetentionAnchor,
    RetentionClass,
    Role,
    UnlistedPaths,
)

SetPrivacyPolicyResult = Annotated[
    PrivacyPolicy | NotPermitted | InvalidInput, strawberry.union("SetPrivacyPolicyResult")
]
DefineRetentionClassResult = Annotated[
    RetentionClass | NotPermitted | InvalidInput, strawberry.union("DefineRetentionClassResult")
]


@strawberry.input(description="A payload path and its class.")
class FieldRuleInput:
    path: str = strawberry.field(description="Object keys joined with dots.")
    class_: FieldClass = strawberry.field(name="class")


@strawberry.input(description="The classes a role is shown without revealing them.")
class RoleClassesInput:
    role: Role
    classes: list[FieldClass] = strawberry.field(
        description="Any of PUBLIC, REFERENCE and PERSONAL: SENSITIVE is shown only when "
        "revealed, SECRET never."
    )


@strawberry.input
class SetPrivacyPolicyInput:
    queue: str
    fields: list[FieldRuleInput] = strawberry.field(
        description="Every path the queue's payloads may carry, each once, none inside "
        "another (at most 500)."
    )
    unlisted: UnlistedPaths = strawberry.field(
        default=UnlistedPaths.DROP, description="What becomes of paths not listed."
    )
    visible: list[RoleClassesInput] | None = strawberry.field(
        default=None,
        description="The classes each role sees without a reveal; a role left out sees no "
        "PERSONAL value. Null: reviewers, approvers and compliance officers see "
        "PERSONAL, PUBLIC and REFERENCE; managers, admins and integrations PUBLIC and REFERENCE.",
    )
    reveal_roles: list[Role] | None = strawberry.field(
        default=None,
        description="The roles that may reveal a SENSITIVE value with a reason. Null: "
        "reviewers, approvers and compliance officers.",
    )
    retention_class: str | None = strawberry.field(
        default=None, description="A class of retentionClasses; null: none."
    )

    def to_domain(self) -> policies.PolicyInput | failures.InvalidInput:
        fields = {rule.path: rule.class_ for rule in self.fields}
        if len(fields) != len(self.fields):
            return failures.InvalidInput("each path is listed once", "fields")
        visible = None
        if self.visible is not None:
            visible = {entry.role: list(entry.classes) for entry in self.visible}
            if len(visible) != len(self.visible):
                return failures.InvalidInput("each role is named once", "visible")
        return policies.PolicyInput(
            fields=fields,
            unlisted=self.unlisted,
            visible=visible,
            reveal_roles=None if self.reveal_roles is None else list(self.reveal_roles),
            retention_class=self.retention_class,
        )


@strawberry.input(description="A retention class: give keepDays or keepSeconds, not both.")
class DefineRetentionClassInput:
    name: str = strawberry.field(
        description="1 to 63 characters of a-z, 0-9, '_', '.', '-' (e.g. `aml-5y`)."
    )
    keep_days: int | None = None
    keep_seconds: int | None = None
    anchor: RetentionAnchor
    basis: str = strawberry.field(
        description='The legal basis, 1 to 500 characters (e.g. "EU AMLR Art. 77: five years '
        'after the end of the business relationship").'
    )

    def to_domain(self) -> retention_classes.RetentionClassInput:
        return retention_classes.RetentionClassInput(
            name=self.name,
            anchor=self.anchor,
            basis=self.basis,
            keep_days=self.keep_days,
            keep_seconds=self.keep_seconds,
        )


@strawberry.type
class PrivacyPolicyMutation:
    @strawberry.mutation(
        description="Puts a new version of a queue's payload policy in force: a class for "
        "each payload path, what becomes of unlisted paths, who sees which class, who may "
        "reveal, and the retention class. Items enqueued before keep the version that split "
        "them. Logged (privacy log: policy_set). Admins only."
    )
    async def set_privacy_policy(
        self, info: Info[Context, None], input: SetPrivacyPolicyInput
    ) -> SetPrivacyPolicyResult:
        ctx = info.context
        parsed = input.to_domain()
        if isinstance(parsed, failures.InvalidInput):
            return from_failure(parsed)
        result = await policies.set_privacy_policy(ctx.db, ctx.principal, input.queue, parsed)
        return from_failure(result) if is_failure(result) else PrivacyPolicy.from_domain(result)

    @strawberry.mutation(
        description="Defines a retention class, once: a name is never redefined (a second "
        "definition is refused with InvalidInput). Logged (privacy log: retention_class_set). "
        "Admins and compliance officers."
    )
    async def define_retention_class(
        self, info: Info[Context, None], input: DefineRetentionClassInput
    ) -> DefineRetentionClassResult:
        ctx = info.context
        result = await retention_classes.define_retention_class(
            ctx.db, ctx.principal, input.to_domain()
        )
        return from_failure(result) if is_failure(result) else RetentionClass.from_domain(result)


@strawberry.type
class PrivacyPolicyQuery:
    @strawberry.field(description="Every retention class, by name.")
    async def retention_classes(self, info: Info[Context, None]) -> list[RetentionClass]:
        found = await retention_classes.retention_classes(info.context.db)
        return [RetentionClass.from_domain(c) for c in found]
