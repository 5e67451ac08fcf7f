"""Reading policy items as one caller may see them: each field's state, and the payload made of
what that caller is shown.

A field of an item under a payload policy is, for a reader:

- ERASED: its value and salt are gone (`item_fields.erased_at`), or its subject's data key
  was shredded; only its digest remains.
- WITHHELD: its subject is restricted (an erasure waits on a hold or a retention period)
  and the reader is not a compliance officer; or the policy does not show its class to the
  reader's role (a sensitive value to a role that may not reveal it).
- MASKED: a sensitive value the reader's role may reveal, with a reason (reveal.py); this
  module never decrypts one.
- VISIBLE: shown; a personal value decrypted under its subject's key, a public or
  reference value taken from the stored payload.

`read_items` answers a page of items in at most two statements (the fields, with their
subjects' restriction and wrapped keys, and the policy versions not yet known); items
without a policy cost nothing: no statement is sent for a page that holds none.
`caller_payload` is the payload a reader may see: the visible values at their paths, every
other value absent.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.domain.model import Item, Principal, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import FieldClass, PrivacyPolicy, place
from server.domain.privacy.sealing import open_sealed
from server.store import sql
from server.store.database import Database, Row


class FieldState(enum.Enum):
    VISIBLE = "visible"
    MASKED = "masked"
    ERASED = "erased"
    WITHHELD = "withheld"


@dataclass(frozen=True)
class FieldView:
    path: str
    field_class: FieldClass
    digest: str
    state: FieldState
    # Only when VISIBLE; None otherwise (and a visible value may itself be null).
    value: Any = None


@dataclass(frozen=True)
class ItemView:
    """One item as one reader may see it. For an item without a policy: no fields, and its
    payload as stored (`has_policy` false)."""

    item_id: int
    subject_ref: str | None
    policy_version: int | None
    fields: tuple[FieldView, ...]
    payload: Any
    has_policy: bool

    def field(self, path: str) -> FieldView | None:
        return next((f for f in self.fields if f.path == path), None)

    @property
    def visible_paths(self) -> list[str]:
        return [f.path for f in self.fields if f.state is FieldState.VISIBLE]


PolicyKey = tuple[str, int]


class PolicyCache:
    """Policy versions read once per request (or per call): versions never change."""

    def __init__(self) -> None:
        self._found: dict[PolicyKey, PrivacyPolicy | None] = {}

    async def get_many(
        self, db: Database, keys: Iterable[PolicyKey]
    ) -> dict[PolicyKey, PrivacyPolicy | None]:
        wanted = sorted({key for key in keys if key not in self._found})
        if wanted:
            rows = await db.fetch(
                sql.privacy_reading.READING_POLICIES_GET,
                queues=[queue for queue, _ in wanted],
                versions=[version for _, version in wanted],
            )
            for key in wanted:
                self._found[key] = None
            for row in rows:
                self._found[(row["queue"], row["version"])] = PrivacyPolicy.from_row(row)
        return dict(self._found)


def may_have_fields(item: Item) -> bool:
    """Whether reading the item may find fields: it was split by a policy, or it is a QA
    copy (whose fields are those of the item its decision was made on)."""
    return item.policy_version is not None or item.qa_of is not None


def _role(reader: Principal | Role) -> Role:
    return reader if isinstance(reader, Role) else reader.role


def field_state(
    policy: PrivacyPolicy | None,
    role: Role,
    field_class: FieldClass,
    *,
    restricted: bool,
    erased: bool,
) -> FieldState:
    """The state a field is in for `role`, before anything is decrypted."""
    if erased:
        return FieldState.ERASED
    if policy is None:  # fail closed: no policy found for the item's version
        return FieldState.WITHHELD
    if restricted and role is not Role.COMPLIANCE:
        return FieldState.WITHHELD
    if field_class is FieldClass.SENSITIVE:
        return FieldState.MASKED if policy.may_reveal(role) else FieldState.WITHHELD
    return FieldState.VISIBLE if policy.sees(role, field_class) else FieldState.WITHHELD


def value_at(payload: Any, path: str) -> tuple[bool, Any]:
    """(found, value) at a dotted path of a stored payload."""
    node = payload
    for step in path.split("."):
        if not isinstance(node, Mapping) or step not in node:
            return False, None
        node = node[step]
    return True, node


async def open_field(keyring: Keyring | None, row: Row) -> tuple[bool, Any]:
    """(opened, value) of a sealed field row that carries its wrapped key: not opened when
    the subject's key is shredded (the field is then as good as erased)."""
    if row["wrapped_key"] is None or row["ciphertext"] is None:
        return False, None
    if keyring is None:
        raise RuntimeError("reading a policy item's personal values needs the keyring")
    key = await keyring.unwrapped(
        row["subject_ref"], row["key_version"], row["kek_id"], row["wrapped_key"]
    )
    return True, open_sealed(
        key.key,
        item_id=row["sealed_item_id"],
        path=row["path"],
        key_version=row["key_version"],
        nonce=row["nonce"],
        ciphertext=row["ciphertext"],
    )


def caller_payload(fields: Iterable[FieldView]) -> dict[str, Any]:
    """The payload a reader may see: each visible value at its path; masked, withheld and
    erased values are absent (not nulled: the bytes do not carry them at all)."""
    payload: dict[str, Any] = {}
    for f in sorted(fields, key=lambda f: f.path):
        if f.state is FieldState.VISIBLE:
            place(payload, f.path, f.value)
    return payload


def unchanged(item: Item) -> ItemView:
    return ItemView(
        item_id=item.id,
        subject_ref=item.subject_ref,
        policy_version=item.policy_version,
        fields=(),
        payload=item.payload,
        # A policy item with no field (every path dropped) has a policy all the same.
        has_policy=item.policy_version is not None,
    )


async def read_items(
    db: Database,
    reader: Principal | Role,
    items: Sequence[Item],
    keyring: Keyring | None,
    policies: PolicyCache | None = None,
) -> dict[int, ItemView]:
    """Each item as `reader` may see it, by item id. The caller has already checked that the
    reader may read the items at all (their queues)."""
    views = {item.id: unchanged(item) for item in items}
    wanted = sorted({item.id for item in items if may_have_fields(item)})
    if not wanted:
        return views
    rows = await db.fetch(sql.privacy_reading.READING_FIELDS_GET, item_ids=wanted)
    if not rows:
        return views
    cache = policies if policies is not None else PolicyCache()
    found = await cache.get_many(
        db, ((row["policy_queue"], row["policy_version"]) for row in rows if row["policy_version"])
    )
    role = _role(reader)
    by_item: dict[int, list[FieldView]] = {}
    keys: dict[int, PolicyKey] = {}
    subjects: dict[int, str] = {}
    by_id = {item.id: item for item in items}
    for row in rows:
        item = by_id[row["item_id"]]
        key = (row["policy_queue"], row["policy_version"])
        keys[item.id] = key
        subjects[item.id] = row["subject_ref"]
        policy = found.get(key) if row["policy_version"] is not None else None
        field_class = FieldClass(row["class"])
        state = field_state(
            policy,
            role,
            field_class,
            restricted=row["restricted"],
            erased=row["erased_at"] is not None,
        )
        value: Any = None
        if state is FieldState.VISIBLE:
            if field_class.encrypted:
                opened, value = await open_field(keyring, row)
                if not opened:
                    state = FieldState.ERASED
            else:
                present, value = value_at(item.payload, row["path"])
                if not present:
                    state = FieldState.ERASED
        by_item.setdefault(item.id, []).append(
            FieldView(row["path"], field_class, row["digest"], state, value)
        )
    for item_id, fields in by_item.items():
        views[item_id] = ItemView(
            item_id=item_id,
            subject_ref=subjects[item_id],
            policy_version=keys[item_id][1],
            fields=tuple(fields),
            payload=caller_payload(fields),
            has_policy=True,
        )
    return views


async def read_item(
    db: Database, reader: Principal | Role, item: Item, keyring: Keyring | None
) -> ItemView:
    return (await read_items(db, reader, [item], keyring))[item.id]
