"""32 claimers through the domain and 16 through HTTP on a live server share 5,000 items."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest

from server.domain.failures import QueueEmpty
from server.domain.identity.tokens import create_token
from server.domain.model import Claim, Principal, Role
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.store import sql
from server.store.database import Database
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.api.live_server import casework_serve
from tests.conftest import INTEGRATION, TestDatabase, reviewer
from tests.integration.helpers import decide

ITEMS = 5000
DOMAIN_CLAIMERS = 32
HTTP_CLAIMERS = 16


class Ledger:
    """What the claimers saw. An item held twice at once is a broken claim."""

    def __init__(self) -> None:
        self.held: set[int] = set()
        self.double_holds: list[int] = []
        self.decided: list[int] = []

    def take(self, item_id: int) -> None:
        if item_id in self.held:
            self.double_holds.append(item_id)
        self.held.add(item_id)

    def done(self, item_id: int) -> None:
        self.held.discard(item_id)
        self.decided.append(item_id)


async def domain_claimer(db: Database, who: Principal, ledger: Ledger) -> None:
    while True:
        claim = await claim_next(db, who, "kyc")
        if isinstance(claim, QueueEmpty):
            return
        assert isinstance(claim, Claim), claim
        ledger.take(claim.item.id)
        await decide(db, who, claim)
        ledger.done(claim.item.id)


async def http_claimer(client: httpx.AsyncClient, token: str, ledger: Ledger) -> None:
    async def call(query: str, **variables: Any) -> dict[str, Any]:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()["data"]
        return data

    while True:
        claim = (await call(CLAIM, queue="kyc"))["claimNext"]
        if claim["__typename"] == "QueueEmpty":
            return
        assert claim["__typename"] == "Claim", claim
        item_id = int(claim["item"]["id"])
        ledger.take(item_id)
        decided = await call(DECIDE, input=decision_input(claim, "APPROVE", "documents_ok"))
        assert decided["submitDecision"]["__typename"] == "DecisionRecorded", decided
        ledger.done(item_id)


@pytest.mark.slow
async def test_mixed_claimers_decide_every_item_exactly_once(
    db: Database, owner_db: Database, test_database: TestDatabase, kyc_queue: str
) -> None:
    enqueued: list[int] = []
    for start in range(0, ITEMS, 1000):
        batch = [NewItem(f"case-{n}", {"n": n}) for n in range(start, start + 1000)]
        result = await enqueue_items(db, INTEGRATION, kyc_queue, batch)
        assert isinstance(result, list)
        enqueued += [entry.item.id for entry in result]
    tokens = [
        await create_token(owner_db, user=f"web-{n}", role=Role.REVIEWER, queues=["kyc"])
        for n in range(HTTP_CLAIMERS)
    ]
    ledger = Ledger()
    async with (
        casework_serve({**os.environ, "DATABASE_URL": test_database.owner_dsn}) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as client,
    ):
        await asyncio.gather(
            *(domain_claimer(db, reviewer(f"svc-{n}"), ledger) for n in range(DOMAIN_CLAIMERS)),
            *(http_claimer(client, token, ledger) for token in tokens),
        )

    assert ledger.double_holds == []
    assert sorted(ledger.decided) == sorted(enqueued)
    rows = await owner_db.fetch(
        sql.decisions_read.DECISIONS_GET_PAGES,
        queues=[kyc_queue],
        after_id=0,
        page_size=ITEMS + 1,
    )
    per_item: dict[int, int] = {}
    for row in rows:
        per_item[row["item_id"]] = per_item.get(row["item_id"], 0) + 1
    assert sorted(per_item) == sorted(enqueued)
    assert set(per_item.values()) == {1}
    reviewers = {row["reviewer"] for row in rows}
    assert any(name.startswith("web-") for name in reviewers), "HTTP claimers did no work"
    assert any(name.startswith("svc-") for name in reviewers), "domain claimers did no work"
