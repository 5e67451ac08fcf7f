"""The demo seed can run on every `casework serve --demo` without piling up data."""

from __future__ import annotations

import asyncpg

from server.config import REPO_ROOT
from server.demo import (
    ESCALATIONS,
    ITEM_COUNT,
    KYC,
    SECOND_REVIEW,
    SUPPLIER_EXCEPTIONS,
    seed_demo,
)
from server.domain.identity.tokens import authenticate, create_token
from server.domain.model import Role, Verdict
from server.domain.review.queues import get_queues
from server.store.database import Database
from tests.conftest import TestDatabase

QUERIES_DIR = REPO_ROOT / "db" / "queries"


async def test_seeding_twice_adds_nothing_but_fresh_tokens(
    test_database: TestDatabase, db: Database, owner_conn: asyncpg.Connection
) -> None:
    first = await seed_demo(test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR)
    second = await seed_demo(
        test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR
    )

    assert (first.items_created, second.items_created) == (ITEM_COUNT, 0)
    assert (
        await owner_conn.fetchval("SELECT count(*) FROM review_items WHERE kind = 'review'")
        == ITEM_COUNT
    )
    # Raised again while open, the demo's exceptions are counted as recurrences.
    assert await owner_conn.fetch(
        "SELECT source_record_id, recurrences FROM exceptions ORDER BY source_record_id"
    ) == [(supplier, 1) for supplier, *_ in SUPPLIER_EXCEPTIONS]
    assert (
        await owner_conn.fetchval(
            "SELECT count(*) FROM reason_codes WHERE queue = ANY($1::text[])", [KYC, ESCALATIONS]
        )
        == 10
    )
    assert set(first.tokens).isdisjoint(second.tokens)


async def test_seeding_again_revokes_the_earlier_demo_tokens_and_no_other(
    test_database: TestDatabase, db: Database, owner_db: Database
) -> None:
    # A token an operator made for a demo user is not the demo's to revoke.
    own = await create_token(owner_db, user="rita-reviewer", role=Role.MANAGER, queues=[])
    first = await seed_demo(test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR)

    second = await seed_demo(
        test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR
    )

    assert (first.tokens_revoked, second.tokens_revoked) == (0, len(first.tokens))
    assert [await authenticate(db, token) for _, token in first.tokens] == [None] * len(
        first.tokens
    )
    assert all([await authenticate(db, token) for _, token in second.tokens])
    assert await authenticate(db, own) is not None


async def test_the_reviewer_token_comes_last_and_covers_the_kyc_queues(
    test_database: TestDatabase, db: Database
) -> None:
    seed = await seed_demo(test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR)

    variable, token = seed.tokens[-1]
    assert variable == "CASEWORK_REVIEWER_TOKEN"
    reviewer = await authenticate(db, token)
    assert reviewer is not None
    assert reviewer.role is Role.REVIEWER
    assert {KYC, ESCALATIONS} <= reviewer.queues
    roles = set()
    for _, other in seed.tokens:
        principal = await authenticate(db, other)
        assert principal is not None
        roles.add(principal.role)
    assert roles == set(Role)
    assert seed.exports()[-1] == f"export CASEWORK_REVIEWER_TOKEN={token}"


async def test_kyc_rejections_wait_for_a_second_reviewer_the_demo_has_a_token_for(
    test_database: TestDatabase, db: Database
) -> None:
    seed = await seed_demo(test_database.owner_dsn, test_database.app_dsn, queries_dir=QUERIES_DIR)

    kyc = (await get_queues(db, [KYC]))[KYC]
    assert kyc.second_review is not None
    assert (kyc.second_review.verdicts, kyc.second_review.queue) == (
        (Verdict.REJECT,),
        SECOND_REVIEW,
    )
    tokens = dict(seed.tokens)
    second = await authenticate(db, tokens["CASEWORK_SECOND_REVIEWER_TOKEN"])
    first = await authenticate(db, tokens["CASEWORK_REVIEWER_TOKEN"])
    assert second is not None
    assert first is not None
    # Two different people: the reviewer decides in kyc, the second reviewer confirms.
    assert (second.role, second.queues) == (Role.REVIEWER, frozenset({SECOND_REVIEW}))
    assert second.user != first.user
