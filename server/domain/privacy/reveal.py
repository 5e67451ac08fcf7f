"""Revealing one field of a policy item, with a reason, and the access report of reveals.

A reveal is written to `privacy_log` before its value leaves the database: the log row and
the read of the sealed value are one statement (reveal_log_and_open), committed on its own,
so a log that cannot be written reveals nothing; the value is decrypted only once that
statement has returned. Each call logs exactly one row, whatever its answer after the
checks (an erasure that lands between the checks and the log answers FieldErased).

Who may reveal: a role the item's policy names in `reveal_roles`, on an item of a queue the
caller's token covers (any other item answers as one that does not exist); a restricted
subject's fields only a compliance officer. Refusals name paths, never values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.domain.parsing import parse_id
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import MAX_PATH_LENGTH, FieldClass, PrivacyPolicy
from server.domain.privacy.reading import open_field
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database

# privacy_log.reason holds 2000; a reason is a sentence or two.
MAX_REASON = 1000
REPORT_ROLES = frozenset({Role.MANAGER, Role.ADMIN, Role.COMPLIANCE})
MAX_REPORT_DAYS = 366
MAX_REPORT_ROWS = 5000


@dataclass(frozen=True)
class Revealed:
    item_id: int
    path: str
    field_class: FieldClass
    value: Any
    revealed_at: datetime


@dataclass(frozen=True)
class FieldErased:
    """The field's value is gone: erased, or its subject's key shredded. Its digest stays."""

    item_id: int
    path: str

    @property
    def message(self) -> str:
        return f"field {self.path!r} of item {self.item_id} was erased: nothing to reveal"


async def reveal_field(
    db: Database,
    principal: Principal,
    keyring: Keyring | None,
    item_id: str,
    path: str,
    reason: str,
) -> Revealed | FieldErased | NotPermitted | InvalidInput | NotFound:
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    if not 1 <= len(path) <= MAX_PATH_LENGTH:
        return InvalidInput(f"path is 1 to {MAX_PATH_LENGTH} characters", "path")
    if problem := check_text(reason, "reason", required=True, limit=MAX_REASON):
        return problem
    target = await db.fetchrow(sql.privacy_reading.REVEAL_TARGET_GET, item_id=parsed, path=path)
    if target is None or not principal.works_in(target["queue"]):
        return NotFound("item", str(parsed))
    if target["policy_version"] is None:
        return InvalidInput(f"item {parsed} has no privacy policy: nothing is masked", "itemId")
    if target["path"] is None:
        return InvalidInput(f"item {parsed} has no field {path!r}", "path")
    row = await db.fetchrow(
        sql.privacy.POLICY_GET_VERSION,
        queue=target["policy_queue"],
        version=target["policy_version"],
    )
    policy = None if row is None else PrivacyPolicy.from_row(row)
    role = principal.role
    if policy is None or not policy.may_reveal(role):
        return NotPermitted(
            f"role {role.value} may not reveal fields of queue {target['policy_queue']!r}'s "
            "items: its privacy policy does not name it among the roles that may"
        )
    if target["restricted"] and role is not Role.COMPLIANCE:
        return NotPermitted(
            f"the subject of item {parsed} is restricted (an erasure waits): only a "
            "compliance officer may see its fields"
        )
    if target["erased_at"] is not None:
        return FieldErased(parsed, path)
    field_class = FieldClass(target["class"])
    if not field_class.encrypted:
        return InvalidInput(
            f"field {path!r} is {field_class.value}: it is not sealed, and shows in the payload "
            "to the roles the policy lets see it",
            "path",
        )
    opened = await db.fetchrow(
        sql.privacy_reading.REVEAL_LOG_AND_OPEN,
        **principal.actor(),
        queue=target["queue"],
        item_id=parsed,
        subject_ref=target["subject_ref"],
        path=path,
        reason=reason,
        field_class=field_class.value,
        authentication_id=principal.authentication_id,
    )
    assert opened is not None, "the log row is always returned"
    done, value = await open_field(keyring, opened)
    if not done:
        return FieldErased(parsed, path)
    return Revealed(parsed, path, field_class, value, opened["revealed_at"])


@dataclass(frozen=True)
class FieldAccess:
    reviewer: str
    path: str
    reveals: int
    last_revealed_at: datetime


async def field_access(
    db: Database,
    principal: Principal,
    queue: str,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
) -> tuple[datetime, datetime, list[FieldAccess]] | NotPermitted | InvalidInput:
    """Reveals in a queue per reviewer and path: managers, admins and compliance officers
    whose token covers the queue. The window defaults to the last seven days."""
    if principal.role not in REPORT_ROLES or not principal.works_in(queue):
        return NotPermitted(
            "the access report is for managers, admins and compliance officers of the queue"
        )
    end = until or now
    start = since or end - timedelta(days=7)
    if start >= end:
        return InvalidInput("since must be before until", "since")
    if end - start > timedelta(days=MAX_REPORT_DAYS):
        return InvalidInput(f"the window is at most {MAX_REPORT_DAYS} days", "since")
    rows = await db.fetch(
        sql.privacy_reading.FIELD_ACCESS_REPORT,
        queue=queue,
        since=start,
        until=end,
        limit=MAX_REPORT_ROWS,
    )
    return (
        start,
        end,
        [FieldAccess(r["reviewer"], r["path"], r["reveals"], r["last_revealed_at"]) for r in rows],
    )


@dataclass(frozen=True)
class Disclosure:
    decision_id: int
    shown: tuple[str, ...]
    revealed: tuple[str, ...]


async def disclosures_by_decision_ids(
    db: Database, decision_ids: list[int]
) -> dict[int, Disclosure]:
    rows = await db.fetch(
        sql.privacy_reading.DISCLOSURES_BY_DECISION_IDS, decision_ids=decision_ids
    )
    return {
        r["decision_id"]: Disclosure(r["decision_id"], tuple(r["shown"]), tuple(r["revealed"]))
        for r in rows
    }
