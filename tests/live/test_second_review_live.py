"""Second review on the live subscriptions of a real `casework serve` (migration 0020): a
provisional decision moves its item out of one queue and into another (both queues' lease
events say so), decisionEvents does not deliver it, and delivers it once it is confirmed."""

from __future__ import annotations

from typing import Any

from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import decision_input
from tests.conftest import TestDatabase, token_maker
from tests.live.helpers import LEASE_EVENTS, serve_kyc, subscriptions_started
from tests.live.wsclient import graphql_socket

SETUP = """
mutation {
  bad: defineReasonCode(input: {queue: "kyc", code: "name_mismatch", label: "Name mismatch",
                                verdicts: [REJECT]}) { __typename }
  four: configureQueue(input: {name: "kyc", secondReview: {verdicts: [REJECT]}}) { __typename }
}
"""
DECISION_EVENTS = """
subscription($queue: String!) {
  decisionEvents(queue: $queue) { id verdict status confirmedBy reviewer }
}
"""
SUBMIT = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) { __typename ... on DecisionRecorded { decision { id status } } }
}
"""
CONFIRM = """
mutation($input: ConfirmDecisionInput!) {
  confirmDecision(input: $input) { __typename ... on DecisionRecorded { decision { id } } }
}
"""
REVIEW_QUEUE = "kyc-second-review"


async def test_a_provisional_decision_is_streamed_when_confirmed(
    test_database: TestDatabase, owner_db: Database
) -> None:
    sam = await token_maker(owner_db)("sam", Role.REVIEWER, REVIEW_QUEUE)
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        setup = await api.call(tokens.admin, SETUP)
        assert {v["__typename"] for v in setup.values()} == {
            "ReasonCodeDefined",
            "QueueConfigured",
        }, setup
        await api.enqueue(tokens.integration, "kyc", {"rejected": {"n": 1}}, priority=10)
        await api.enqueue(tokens.integration, "kyc", {"approved": {"n": 2}})

        async with graphql_socket(casework.url, tokens.admin) as socket:
            decisions = await socket.subscribe(DECISION_EVENTS, queue="kyc")
            left = await socket.subscribe(LEASE_EVENTS, queue="kyc")
            arrived = await socket.subscribe(LEASE_EVENTS, queue=REVIEW_QUEUE)
            await subscriptions_started(socket, "kyc")

            claim = await api.claim(tokens.rita, "kyc")
            entry = decision_input(claim, "REJECT", "name_mismatch")
            rejected = (await api.call(tokens.rita, SUBMIT, input=entry))["submitDecision"]
            assert rejected["decision"]["status"] == "PROVISIONAL", rejected
            provisional_id = rejected["decision"]["id"]
            item_id = claim["item"]["id"]

            def event(kind: str, queue: str) -> dict[str, Any]:
                return {"kind": kind, "queue": queue, "itemId": item_id, "owner": None}

            assert (await socket.next(left))["leaseEvents"]["kind"] == "CLAIMED"
            assert (await socket.next(left))["leaseEvents"] == event("SECOND_REVIEW", "kyc")
            assert (await socket.next(arrived))["leaseEvents"] == event(
                "SECOND_REVIEW", REVIEW_QUEUE
            )

            # Committed after the provisional decision: delivered first, so the stream
            # has passed the provisional one by without delivering it.
            plain = await api.decide(tokens.rita, await api.claim(tokens.rita, "kyc"))
            first = (await socket.next(decisions))["decisionEvents"]
            assert (first["id"], first["status"]) == (plain, "EFFECTIVE")

            second = await api.claim(sam, REVIEW_QUEUE)
            answer = {
                "itemId": second["item"]["id"],
                "leaseToken": second["leaseToken"],
                "evidenceHash": second["evidenceHash"],
            }
            confirmed = (await api.call(sam, CONFIRM, input=answer))["confirmDecision"]
            assert confirmed["__typename"] == "DecisionRecorded", confirmed

            delivered = (await socket.next(decisions))["decisionEvents"]
            assert delivered == {
                "id": provisional_id,
                "verdict": "REJECT",
                "status": "EFFECTIVE",
                "confirmedBy": "sam",
                "reviewer": "rita",
            }
    casework.assert_no_traceback()
