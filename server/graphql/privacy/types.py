"""The object types and enums of personal data: a queue's payload policy, retention classes.

As elsewhere (review/types.py), strawberry.enum marks the domain enum itself as the GraphQL
enum, so each is defined once, in the domain; the names below are those classes.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from server.domain import model
from server.domain.privacy import policy, retention_classes

strawberry.enum(
    policy.FieldClass,
    name="FieldClass",
    description="What a payload path holds, and so how it is stored and shown. PUBLIC: kept "
    "in the payload as is. PERSONAL: encrypted per subject, shown to the roles the policy "
    "names. SENSITIVE: encrypted per subject, masked until revealed with a reason. REFERENCE: "
    "a document id or URL with its digest, kept as is. SECRET: a password or key sent by "
    "mistake: an enqueue carrying it is refused and it is stored nowhere.",
)
strawberry.enum(
    policy.Unlisted,
    name="UnlistedPaths",
    description="What happens to payload paths a policy does not list. DROP: they are "
    "removed before anything is stored, and the enqueue answers them in droppedPaths. "
    "REFUSE: the enqueue is refused, naming them.",
)
strawberry.enum(
    model.Role,
    name="Role",
    description="What a token or sign-in grants. COMPLIANCE: holds, erasure requests and "
    "approvals, relationship ends, restricted data; no review work.",
)
strawberry.enum(
    retention_classes.RetentionAnchor,
    name="RetentionAnchor",
    description="The moment a retention period is counted from. ENQUEUED: the item's first "
    "enqueue. DECIDED: its effective decision. RELATIONSHIP_ENDED: the end of the business "
    "relationship the integration reports for the subject (reportRelationshipEnded).",
)
FieldClass = policy.FieldClass
UnlistedPaths = policy.Unlisted
Role = model.Role
RetentionAnchor = retention_classes.RetentionAnchor


@strawberry.type(description="A payload path and its class.")
class FieldRule:
    path: str = strawberry.field(
        description="Object keys joined with dots (`applicant.date_of_birth`); the value "
        "there is taken whole, whatever its type."
    )
    class_: FieldClass = strawberry.field(name="class")


@strawberry.type(description="The classes a role is shown without revealing them.")
class RoleClasses:
    role: Role
    classes: list[FieldClass]


@strawberry.type(
    description="A version of a queue's payload policy. Versions are never rewritten: an "
    "item keeps the version that split its payload."
)
class PrivacyPolicy:
    queue: str
    version: int
    fields: list[FieldRule] = strawberry.field(description="Each listed path, in path order.")
    unlisted: UnlistedPaths
    visible: list[RoleClasses] = strawberry.field(
        description="The classes each role sees without a reveal; a role left out sees no "
        "PERSONAL value."
    )
    reveal_roles: list[Role] = strawberry.field(
        description="The roles that may reveal a SENSITIVE value (revealField, with a reason)."
    )
    retention_class: str | None = strawberry.field(
        description="The retention class of the queue's items' personal data (see "
        "retentionClasses); null: kept until erased on request."
    )
    created_by: str | None
    created_at: datetime | None

    @classmethod
    def from_domain(cls, found: policy.PrivacyPolicy) -> PrivacyPolicy:
        return cls(
            queue=found.queue,
            version=found.version,
            fields=[
                FieldRule(path=path, class_=field_class)
                for path, field_class in sorted(found.fields.items())
            ],
            unlisted=found.unlisted,
            visible=[
                RoleClasses(role=role, classes=sorted(classes, key=lambda c: c.value))
                for role, classes in sorted(found.visible.items(), key=lambda kv: kv[0].value)
            ],
            reveal_roles=sorted(found.reveal_roles, key=lambda role: role.value),
            retention_class=found.retention_class,
            created_by=found.created_by,
            created_at=found.created_at,
        )


@strawberry.type(
    description="How long personal data is kept, from which moment, on what basis. Defined "
    "once, never changed."
)
class RetentionClass:
    name: str
    keep_seconds: int
    keep_days: float = strawberry.field(description="keepSeconds in days.")
    anchor: RetentionAnchor
    basis: str = strawberry.field(
        description="The legal basis an erasure deferred by this class cites."
    )
    created_by: str
    created_at: datetime

    @classmethod
    def from_domain(cls, found: retention_classes.RetentionClass) -> RetentionClass:
        return cls(
            name=found.name,
            keep_seconds=found.keep_seconds,
            keep_days=found.keep_days,
            anchor=found.anchor,
            basis=found.basis,
            created_by=found.created_by,
            created_at=found.created_at,
        )
