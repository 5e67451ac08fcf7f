"""People of the provider in the database: identified by issuer + subject, given a handle
once, never the e-mail address, and never one that someone else already goes by."""

from __future__ import annotations

import asyncio

from server.domain.identity.people import PrincipalKind, fallback_handle, person_seen
from server.domain.model import Role
from server.store.database import Database
from tests.conftest import token_maker

ISSUER = "https://idp.example.test"
PAIRS = 10


async def test_a_person_is_known_by_issuer_and_subject_and_keeps_the_first_handle(
    db: Database,
) -> None:
    first = await person_seen(db, ISSUER, {"sub": "s-1", "preferred_username": "ann"})
    renamed = await person_seen(
        db, ISSUER, {"sub": "s-1", "preferred_username": "annie", "name": "Annie"}
    )

    assert renamed.id == first.id
    assert renamed.user_name == "ann"
    assert renamed.display_name == "Annie"
    assert renamed.kind is PrincipalKind.PERSON


async def test_the_same_subject_at_another_issuer_is_another_person(db: Database) -> None:
    here = await person_seen(db, ISSUER, {"sub": "s-1", "preferred_username": "ann"})
    there = await person_seen(db, "https://other.test", {"sub": "s-1", "preferred_username": "ann"})

    assert there.id != here.id
    assert there.user_name == fallback_handle("ann", "https://other.test", "s-1")


async def test_the_email_address_is_never_the_handle(db: Database) -> None:
    person = await person_seen(db, ISSUER, {"sub": "a1b2", "email": "bo@example.test"})

    assert person.user_name == "a1b2"


async def test_a_new_identity_cannot_take_a_cli_tokens_user_name(
    db: Database, owner_db: Database
) -> None:
    await token_maker(owner_db)("root", Role.ADMIN)

    person = await person_seen(db, ISSUER, {"sub": "x", "preferred_username": "root"})

    assert person.user_name != "root"
    assert person.user_name == fallback_handle("root", ISSUER, "x")


async def test_new_identities_racing_for_one_handle_each_get_their_own(db: Database) -> None:
    names = [f"dup-{n}" for n in range(PAIRS)]

    people = await asyncio.gather(
        *(
            person_seen(db, ISSUER, {"sub": f"{name}-{side}", "preferred_username": name})
            for name in names
            for side in ("a", "b")
        )
    )

    handles = [person.user_name for person in people]
    assert len(set(handles)) == 2 * PAIRS
    for name in names:
        mine = [h for h in handles if h == name or h.startswith(f"{name}-")]
        assert len(mine) == 2
        assert name in mine
