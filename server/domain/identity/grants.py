"""Choosing the grant a request acts under, and the queues its patterns name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from fnmatch import fnmatchcase

from server.domain.model import QUEUE_PATTERN, Authentication, Grant, Principal
from server.store import sql
from server.store.database import Database


class RoleNotHeld(Exception):
    """A request asked to act under a role none of its principal's grants gives."""

    def __init__(self, role: str, held: tuple[str, ...]) -> None:
        self.role = role
        self.held = held
        roles = ", ".join(held) or "none"
        super().__init__(f"you do not hold the role {role!r} (your roles: {roles})")


class NoAccess(Exception):
    """A verified identity that no rule grants anything: deny by default."""


def active_grant(grants: tuple[Grant, ...], requested: str | None) -> Grant:
    """The grant a request acts under: the one for the requested role, else the first."""
    if not grants:
        raise NoAccess("no rule grants this identity any role")
    if not requested:
        return grants[0]
    for grant in grants:
        if grant.role.value == requested:
            return grant
    raise RoleNotHeld(requested, tuple(grant.role.value for grant in grants))


def has_patterns(queues: Iterable[str]) -> bool:
    return any(not QUEUE_PATTERN.isdisjoint(queue) for queue in queues)


def queue_names(patterns: Iterable[str], known: Iterable[str]) -> frozenset[str]:
    """The queues the patterns name: a plain name stands for itself (a queue made later is
    covered as soon as it exists); a pattern covers the known queues it matches.

    The patterns stay in the set too. No queue name can hold `*?[` (QUEUE_NAME), so they
    match nothing, and a grant whose patterns match no queue yet covers no queue, rather
    than being taken for the empty list that means "every queue"."""
    patterns = tuple(patterns)
    wild = [pattern for pattern in patterns if not QUEUE_PATTERN.isdisjoint(pattern)]
    matched = (queue for queue in known if any(fnmatchcase(queue, p) for p in wild))
    return frozenset(patterns).union(matched)


async def granted_queues(db: Database, grant: Grant) -> frozenset[str]:
    """The grant's queue patterns as queue names (patterns read the queues there are)."""
    known: Iterable[str] = ()
    if has_patterns(grant.queues):
        known = [row["name"] for row in await db.fetch(sql.identity.QUEUE_NAMES_LIST)]
    return queue_names(grant.queues, known)


async def acting_principal(
    db: Database,
    *,
    user: str,
    display_name: str | None,
    grants: tuple[Grant, ...],
    requested_role: str | None,
    expires_at: datetime | None,
    authentication: Authentication,
) -> Principal:
    """A person or machine of the provider, acting under the grant the request asked for
    (the first by default); how it authenticated names the rules behind that grant."""
    grant = active_grant(grants, requested_role)
    return Principal(
        user=user,
        role=grant.role,
        queues=await granted_queues(db, grant),
        expires_at=expires_at,
        grants=grants,
        display_name=display_name,
        authentication=replace(authentication, rules=grant.rules),
    )
