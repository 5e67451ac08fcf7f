"""Policy items as the caller may see them: ReviewItem's payload, fields, subjectRef and
policyVersion, and Decision.disclosure.

Each request reads the views of the items it shows in one batch (server/domain/privacy/
reading.py: two statements for a page); items without a policy are answered from the item
itself, with no statement and no await.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain.model import Item
from server.domain.privacy import reading, reveal
from server.graphql.context import Context
from server.graphql.loaders import Loaders
from server.graphql.privacy.types import FieldClass

strawberry.enum(
    reading.FieldState,
    name="FieldState",
    description="VISIBLE: shown, with its value. MASKED: a sensitive value your role may "
    "reveal with a reason (revealField). ERASED: its value is gone; its digest remains. "
    "WITHHELD: your role is not shown this class, or the subject is restricted (compliance "
    "officers only).",
)
FieldState = reading.FieldState


@strawberry.type(description="One field of an item under a privacy policy, as you may see it.")
class ItemField:
    path: str
    field_class: FieldClass = strawberry.field(name="class")
    state: FieldState
    digest: str = strawberry.field(
        description="SHA-256 of the field's salt, path and value: kept after erasure."
    )
    value: JSON | None = strawberry.field(
        description="The value, when VISIBLE; null otherwise (absent from the payload too)."
    )

    @classmethod
    def from_domain(cls, field: reading.FieldView) -> ItemField:
        return cls(
            path=field.path,
            field_class=field.field_class,
            state=field.state,
            digest=field.digest,
            value=field.value if field.state is reading.FieldState.VISIBLE else None,
        )


@strawberry.type(description="What the deciding reviewer was shown of a policy item.")
class Disclosure:
    shown: list[str] = strawberry.field(
        description="The paths visible to their role without a reveal, and those revealed."
    )
    revealed: list[str] = strawberry.field(
        description="The paths they revealed (revealField) on the item before deciding."
    )


class ItemViews:
    """One request's views of the items it shows, loaded together."""

    def __init__(self, context: Context) -> None:
        # Not the context itself: it holds the loaders this is kept under (weakly).
        self._db = context.db
        self._principal = context.principal
        self._keyring = context.keyring
        self._items: dict[int, Item] = {}
        self._policies = reading.PolicyCache()
        self.views: DataLoader[int, reading.ItemView] = DataLoader(load_fn=self._load)
        self.disclosures: DataLoader[int, reveal.Disclosure | None] = DataLoader(
            load_fn=self._load_disclosures
        )

    def load(self, item: Item) -> Awaitable[reading.ItemView]:
        self._items.setdefault(item.id, item)
        return self.views.load(item.id)

    async def _load(self, ids: list[int]) -> list[reading.ItemView]:
        found = await reading.read_items(
            self._db, self._principal, [self._items[i] for i in ids], self._keyring, self._policies
        )
        return [found[i] for i in ids]

    async def _load_disclosures(self, ids: list[int]) -> list[reveal.Disclosure | None]:
        found = await reveal.disclosures_by_decision_ids(self._db, list(ids))
        return [found.get(i) for i in ids]


# Keyed by the request's loaders: a socket's context gets new ones for each event
# (Context.forget_reads), and its views go with them.
_views: weakref.WeakKeyDictionary[Loaders, ItemViews] = weakref.WeakKeyDictionary()


def item_views(info: Info[Context, None]) -> ItemViews:
    context = info.context
    found = _views.get(context.loaders)
    if found is None:
        found = _views[context.loaders] = ItemViews(context)
    return found


async def _view_payload(info: Info[Context, None], item: Item) -> Any:
    return (await item_views(info).load(item)).payload


def payload_of(info: Info[Context, None], item: Item) -> Any:
    """The payload as stored for an item without a policy (no await); the caller's view of
    a policy item: only what it may see, the rest absent."""
    if not reading.may_have_fields(item):
        return item.payload
    return _view_payload(info, item)


async def _view_fields(info: Info[Context, None], item: Item) -> list[ItemField] | None:
    view = await item_views(info).load(item)
    return [ItemField.from_domain(f) for f in view.fields] if view.has_policy else None


def fields_of(
    info: Info[Context, None], item: Item
) -> list[ItemField] | Awaitable[list[ItemField] | None] | None:
    if not reading.may_have_fields(item):
        return None
    return _view_fields(info, item)


async def _view_subject(info: Info[Context, None], item: Item) -> str | None:
    return (await item_views(info).load(item)).subject_ref


def subject_ref_of(info: Info[Context, None], item: Item) -> str | Awaitable[str | None] | None:
    if item.qa_of is None:
        return item.subject_ref
    return _view_subject(info, item)


async def _view_policy_version(info: Info[Context, None], item: Item) -> int | None:
    return (await item_views(info).load(item)).policy_version


def policy_version_of(info: Info[Context, None], item: Item) -> int | Awaitable[int | None] | None:
    if item.qa_of is None:
        return item.policy_version
    return _view_policy_version(info, item)


async def disclosure_of(info: Info[Context, None], decision_id: int) -> Disclosure | None:
    found = await item_views(info).disclosures.load(decision_id)
    if found is None:
        return None
    return Disclosure(shown=list(found.shown), revealed=list(found.revealed))
