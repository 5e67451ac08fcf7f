"""The token cache of a serving process (server/domain/identity/principals.py) against a real
database: a burst of requests with one token it has not seen sends one lookup, a caller that
goes away does not take the answer from the others, an outage reaches every waiter and the next
call asks again, and a full cache forgets the entry it trusted first, not everything."""

from __future__ import annotations

import asyncio

import pytest

from server.domain.identity import principals as identity
from server.domain.identity import tokens
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.model import Principal, Role
from server.store.database import Database
from tests.conftest import token_maker

BURST = 50
# A bound on waiting for the lookup to start, so that a broken cache fails instead of hanging.
WAIT_SECONDS = 10


class HeldLookups:
    """Wraps the real lookup: counts the calls and holds each until `release` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fail_first: bool = False) -> None:
        self.tokens: list[str] = []
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self._fail_first = fail_first
        real = tokens.authenticate

        async def held(db: Database, token: str) -> Principal | None:
            self.tokens.append(token)
            self.entered.set()
            await self.release.wait()
            if self._fail_first and len(self.tokens) == 1:
                raise ConnectionError("the database went away")
            return await real(db, token)

        monkeypatch.setattr("server.domain.identity.principals.authenticate", held)


async def test_a_burst_with_one_new_token_sends_one_lookup(
    db: Database, owner_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await token_maker(owner_db)("alice", Role.REVIEWER, "kyc")
    lookups = HeldLookups(monkeypatch)
    resolver = CredentialResolver(db, ttl=60)

    burst = [
        asyncio.create_task(resolver.resolve(Credentials.of(f"Bearer {token}")))
        for _ in range(BURST)
    ]
    await asyncio.wait_for(lookups.entered.wait(), WAIT_SECONDS)
    # The first caller hangs up while the lookup is out: the others still get the answer.
    burst[0].cancel()
    lookups.release.set()
    answers = await asyncio.gather(*burst[1:])

    assert lookups.tokens == [token]
    assert {(p.user, p.role) for p in answers if p is not None} == {("alice", Role.REVIEWER)}
    assert all(p is not None for p in answers)
    assert burst[0].cancelled()
    # And it is cached now: no further lookup.
    assert await resolver.resolve(Credentials.of(f"Bearer {token}")) == answers[0]
    assert lookups.tokens == [token]


async def test_an_outage_reaches_every_waiter_and_the_next_call_asks_again(
    db: Database, owner_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await token_maker(owner_db)("alice", Role.REVIEWER, "kyc")
    lookups = HeldLookups(monkeypatch, fail_first=True)
    resolver = CredentialResolver(db, ttl=60)

    burst = [
        asyncio.create_task(resolver.resolve(Credentials.of(f"Bearer {token}")))
        for _ in range(BURST)
    ]
    await asyncio.wait_for(lookups.entered.wait(), WAIT_SECONDS)
    lookups.release.set()
    outcomes = await asyncio.gather(*burst, return_exceptions=True)

    assert len(outcomes) == BURST
    assert all(isinstance(outcome, ConnectionError) for outcome in outcomes)
    principal = await resolver.resolve(Credentials.of(f"Bearer {token}"))
    assert principal is not None
    assert principal.user == "alice"
    assert lookups.tokens == [token, token]


async def test_a_full_cache_forgets_the_entry_it_trusted_first(
    db: Database, owner_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = token_maker(owner_db)
    first, second, third, fourth = [
        await make(f"reviewer-{n}", Role.REVIEWER, "kyc") for n in range(4)
    ]
    monkeypatch.setattr(identity, "CACHE_LIMIT", 3)
    lookups = HeldLookups(monkeypatch)
    lookups.release.set()
    resolver = CredentialResolver(db, ttl=60)

    for token in (first, second, third, fourth):
        assert await resolver.resolve(Credentials.of(f"Bearer {token}")) is not None
    assert lookups.tokens == [first, second, third, fourth]
    # The three newest are still trusted: no lookup for them.
    for token in (second, third, fourth):
        assert await resolver.resolve(Credentials.of(f"Bearer {token}")) is not None
    assert len(lookups.tokens) == 4
    # The first one was forgotten, alone, to make room for the fourth.
    assert await resolver.resolve(Credentials.of(f"Bearer {first}")) is not None
    assert lookups.tokens[4:] == [first]
