"""The one revocation routine: sessions ended, CLI tokens revoked, provider tokens issued
before it refused, leases released with a timeline row saying why, all in one transaction;
idempotent; an unknown user is an outcome, not an error."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg

from server.domain.failures import NotPermitted, StaleLease
from server.domain.identity.people import person_seen
from server.domain.identity.revocation import (
    RevocationSource,
    UserNotFound,
    UserRevoked,
    revoke_user,
    revoke_user_as,
)
from server.domain.identity.sessions import live_session
from server.domain.identity.tokens import authenticate
from server.domain.model import Role
from server.domain.review.decisions import submit_decision
from server.domain.review.leases import claim_next
from server.domain.timeline.events import PageKey, TimelineKind, events_pages
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, MANAGER, token_maker
from tests.integration.helpers import Listener, enqueue_one, verdict_for
from tests.integration.identity_helpers import ISSUER, signed_in


async def test_revoking_ends_sessions_tokens_and_leases_with_a_timeline_row(
    db: Database,
    owner_db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    listener: Listener,
) -> None:
    alice, _person, session = await signed_in(db, "alice")
    cli = await token_maker(owner_db)("alice", Role.REVIEWER, "kyc")
    await enqueue_one(db, kyc_queue, "cust-1")
    await enqueue_one(db, kyc_queue, "cust-2")
    first = await claim_next(db, alice, kyc_queue)
    second = await claim_next(db, alice, kyc_queue)
    assert await live_session(db, session.secret) is not None
    assert await authenticate(db, cli) is not None

    outcome: list[UserRevoked | UserNotFound] = []

    async def revoke() -> None:
        outcome.append(
            await revoke_user(
                db,
                "alice",
                source=RevocationSource.CLI,
                revoked_by="cli:ops",
                reason="left the bank",
            )
        )

    hints = [parse_event(hint) for hint in await listener.events_of(revoke())]
    [result] = outcome

    assert isinstance(result, UserRevoked), result
    assert (result.sessions_ended, result.tokens_revoked, result.leases_released) == (1, 1, 2)
    assert result.released_items == tuple(sorted((first.item.id, second.item.id)))  # type: ignore[union-attr]
    assert {(h.kind, h.item_id) for h in hints if h} == {
        ("revoked", item) for item in result.released_items
    }
    assert await live_session(db, session.secret) is None
    assert await authenticate(db, cli) is None
    # Provider tokens issued before the revocation are refused; later ones are not.
    again = await person_seen(db, ISSUER, {"sub": "alice", "preferred_username": "alice"})
    assert again.refuses(datetime.now(UTC) - timedelta(seconds=1))
    assert not again.refuses(datetime.now(UTC) + timedelta(seconds=1))
    # The lease is gone: a decision under it is stale, and the item is claimable again.
    stale = await submit_decision(db, alice, verdict_for(first))  # type: ignore[arg-type]
    assert isinstance(stale, StaleLease)
    rows = await owner_conn.fetch(
        "SELECT item_id, actor, actor_role, body, detail ->> 'owner' AS owner FROM item_events"
        " WHERE kind = 'revoked' ORDER BY item_id"
    )
    assert [(r["actor"], r["body"], r["owner"]) for r in rows] == [
        ("cli:ops", "access revoked: cli: left the bank", "alice")
    ] * 2
    recorded = await owner_conn.fetchrow("SELECT * FROM principal_revocations")
    assert recorded is not None
    assert (recorded["user_name"], recorded["source"], recorded["leases_released"]) == (
        "alice",
        "cli",
        2,
    )
    timeline = (await events_pages(db, [PageKey(first.item.id, None, 100)]))[  # type: ignore[union-attr]
        PageKey(first.item.id, None, 100)  # type: ignore[union-attr]
    ]
    assert [e.kind for e in timeline][-1] is TimelineKind.REVOKED
    assert timeline[-1].body == "access revoked: cli: left the bank"


async def by_admin(db: Database, user: str) -> UserRevoked:
    result = await revoke_user(
        db, user, source=RevocationSource.ADMIN, revoked_by="ada", reason=None
    )
    assert isinstance(result, UserRevoked), result
    return result


async def test_revoking_again_ends_nothing_more(db: Database, kyc_queue: str) -> None:
    await signed_in(db, "bob")
    first = await by_admin(db, "bob")
    second = await by_admin(db, "bob")
    assert (first.sessions_ended, second.sessions_ended) == (1, 0)
    assert (second.tokens_revoked, second.leases_released) == (0, 0)


async def test_an_unknown_user_is_an_outcome_and_writes_nothing(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    result = await revoke_user(
        db, "nobody", source=RevocationSource.CLI, revoked_by="cli:ops", reason=None
    )
    assert result == UserNotFound("nobody")
    assert await owner_conn.fetchval("SELECT count(*) FROM principal_revocations") == 0


async def test_only_an_admin_revokes(db: Database) -> None:
    await signed_in(db, "carol")
    refused = await revoke_user_as(db, MANAGER, "carol", None)
    assert isinstance(refused, NotPermitted)
    done = await revoke_user_as(db, ADMIN, "carol", "offboarded")
    assert isinstance(done, UserRevoked)
    assert done.source is RevocationSource.ADMIN


async def test_a_revocation_racing_a_claim_leaves_no_lease_behind(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    dave, _, _ = await signed_in(db, "dave")
    for n in range(20):
        await enqueue_one(db, kyc_queue, f"cust-{n}")
    claims = [claim_next(db, dave, kyc_queue) for _ in range(10)]
    revocation = revoke_user(
        db, "dave", source=RevocationSource.ADMIN, revoked_by="ada", reason="race"
    )
    *claimed, revoked = await asyncio.gather(*claims, revocation)
    assert isinstance(revoked, UserRevoked)
    # Whatever the claims got before the revocation was released by it; those after it
    # hold leases the next revocation releases: nothing the revocation saw survives it.
    held = await owner_conn.fetch(
        "SELECT id FROM review_items WHERE lease_owner = 'dave' AND lease_token IS NOT NULL"
    )
    again = await by_admin(db, "dave")
    assert again.leases_released == len(held)
    assert revoked.leases_released + again.leases_released == sum(
        1 for c in claimed if hasattr(c, "lease_token")
    )
