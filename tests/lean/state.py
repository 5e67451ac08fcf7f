"""The seeded state both applications answer from, made through the API as clients would.

Queues: `kyc` (escalating to `kyc-senior`, a hold reason, reason codes), `solo` (one lease
per reviewer, and rita holds it: her next claim there is LeaseLimitReached) and `quiet`
(nothing waiting: QueueEmpty). In `kyc` rita holds one lease, one item is decided, three
wait.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import SETUP_QUEUES
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input
from tests.conftest import token_maker
from tests.lean.apps import bearer, call, graphql_body
from tests.lean.variables import Vocabulary

# The roles the differential test sends each document with.
ROLES = ("admin", "manager", "reviewer", "integration")
MORE_QUEUES = """
mutation {
  solo: configureQueue(input: {name: "solo", maxLeasesPerReviewer: 1}) { __typename }
  quiet: configureQueue(input: {name: "quiet"}) { __typename }
  soloOk: defineReasonCode(input: {queue: "solo", code: "documents_ok", label: "ok",
                                   verdicts: [APPROVE]}) { __typename }
  wait: defineHoldReason(input: {queue: "kyc", code: "awaiting_documents",
                                 label: "Awaiting documents"}) { __typename }
}
"""


@dataclass(frozen=True)
class State:
    tokens: dict[str, str]
    # rita's live lease in kyc: the Claim as the API answered it.
    lease: dict[str, Any]
    decided_item: str
    pending_items: tuple[str, ...]
    vocabulary: Vocabulary


async def _ask(app: ASGIApp, token: str, query: str, **variables: Any) -> dict[str, Any]:
    answer = await call(app, graphql_body(query, variables), bearer(token))
    body = json.loads(answer.body)
    assert answer.status == 200, body
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def seed(app: ASGIApp, owner_db: Database) -> State:
    make = token_maker(owner_db)
    tokens = {
        "admin": await make("ada", Role.ADMIN),
        "manager": await make("max", Role.MANAGER),
        "reviewer": await make("rita", Role.REVIEWER, "kyc", "kyc-senior", "solo", "quiet"),
        "integration": await make("kyc-provider", Role.INTEGRATION),
    }
    configured = await _ask(app, tokens["admin"], SETUP_QUEUES)
    configured |= await _ask(app, tokens["admin"], MORE_QUEUES)
    assert all(result["__typename"] != "InvalidInput" for result in configured.values())
    ids: dict[str, list[str]] = {}
    for queue, count in (("kyc", 5), ("solo", 2)):
        items = [
            {"externalKey": f"{queue}-{n}", "payload": {"applicant": f"Applicant {n}", "n": n}}
            for n in range(count)
        ]
        enqueued = await _ask(app, tokens["integration"], ENQUEUE, queue=queue, items=items)
        assert enqueued["enqueueItems"]["__typename"] == "EnqueuedItems", enqueued
        ids[queue] = [entry["item"]["id"] for entry in enqueued["enqueueItems"]["items"]]
    rita = tokens["reviewer"]
    decided = (await _ask(app, rita, CLAIM, queue="kyc"))["claimNext"]
    recorded = await _ask(
        app, rita, DECIDE, input=decision_input(decided, "APPROVE", "documents_ok")
    )
    assert recorded["submitDecision"]["__typename"] == "DecisionRecorded", recorded
    lease = (await _ask(app, rita, CLAIM, queue="kyc"))["claimNext"]
    solo = (await _ask(app, rita, CLAIM, queue="solo"))["claimNext"]
    assert lease["__typename"] == solo["__typename"] == "Claim", (lease, solo)
    taken = {decided["item"]["id"], lease["item"]["id"]}
    pending = tuple(item for item in ids["kyc"] if item not in taken)
    strings = (
        "kyc", "kyc-senior", "solo", "quiet", "documents_ok", "name_mismatch",
        "awaiting_documents", "rita", "max", lease["leaseToken"], lease["evidenceHash"],
        solo["leaseToken"],
    )  # fmt: skip
    vocabulary = Vocabulary(
        strings=strings,
        ids=(*ids["kyc"], *ids["solo"], recorded["submitDecision"]["decision"]["id"]),
    )
    return State(tokens, lease, decided["item"]["id"], pending, vocabulary)
