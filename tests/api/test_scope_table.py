"""A token's queues bound what it may do and see, for every role: every mutation, tried by
every role with a token covering team A's queues (in scope) and with a token of the same
user covering only team B's (out of scope), on team A's things. Against one real
`casework serve` process over HTTP, on one database.

- In scope, the role the mutation belongs to succeeds (so a refusal elsewhere is about the
  scope or the role, not a broken call).
- Every other call is refused with an error of the result union, and nothing in any table
  changes.
- Out of scope, the answer is the one for a thing that does not exist: the same member, the
  same message and field, apart from the id or name echoed back.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.store.database import Database, connect, create_pool
from server.store.queries import Queries
from tests import pg
from tests.api.helpers import data_tables, decision_input
from tests.api.live_server import casework_serve_process
from tests.conftest import TestDatabase
from tests.live.helpers import Api, serve_env

# The table is run once, by a module fixture of some 20 s: its tests share one worker.
pytestmark = pytest.mark.xdist_group("scope_table")

ROLES = [role.value for role in Role]
SCOPES = ("in", "out")
TEAM_QUEUES = ("{t}", "{t}-senior", "{t}-ops", "{t}-leads", "{t}-approvals")
NO_EXCEPTION = "exc_0000000000000000000Z"
NO_ITEM = "987654321"
DUE = {"low": 259200, "medium": 86400, "high": 14400, "critical": 3600}
ALL_ACTIONS = [
    "ATTACH_EVIDENCE",
    "SUBMIT_CORRECTION",
    "APPROVE_CORRECTION",
    "REJECT_CORRECTION",
    "REQUEST_REDRIVE",
    "REPORT_REDRIVE_RESULT",
    "CLOSE_EXCEPTION",
    "REOPEN_EXCEPTION",
]

ANSWER = """
    __typename
    ... on Error { message }
    ... on InvalidInput { field }
"""


def mutation(name: str, declared: str, passed: str, errors: str = "") -> str:
    return f"mutation({declared}) {{ result: {name}({passed}) {{ {ANSWER} {errors} }} }}"


def with_input(name: str, input_type: str, errors: str = "") -> str:
    return mutation(name, f"$input: {input_type}!", "input: $input", errors)


TEAM_SETUP = """
mutation($t: String!, $senior: String!, $ops: String!, $leads: String!, $approvals: String!,
         $workflow: String!) {
  senior: configureQueue(input: {name: $senior}) { __typename }
  main: configureQueue(input: {name: $t, escalationQueue: $senior,
                              secondReview: {verdicts: [REJECT], queue: $senior}}) { __typename }
  ops: configureQueue(input: {name: $ops}) { __typename }
  leads: configureQueue(input: {name: $leads}) { __typename }
  approvals: configureQueue(input: {name: $approvals}) { __typename }
  ok: defineReasonCode(input: {queue: $t, code: "ok", label: "Fine", verdicts: [APPROVE]}) {
    __typename
  }
  bad: defineReasonCode(input: {queue: $t, code: "bad", label: "No", verdicts: [REJECT]}) {
    __typename
  }
  qa: defineReasonCode(input: {queue: $senior, code: "qa_ok", label: "Agree",
                               verdicts: [APPROVE]}) {
    __typename
  }
  hold: defineHoldReason(input: {queue: $t, code: "waiting", label: "Waiting"}) {
    __typename
  }
  workflow: configureWorkflow(input: {name: $workflow, approvalQueue: $approvals}) {
    __typename
  }
  reason: defineExceptionReason(input: {
    workflow: $workflow, code: "mismatch", label: "Mismatch", ownerRole: $ops,
    escalationOwnerRole: $leads,
    allowedActions: [ATTACH_EVIDENCE, SUBMIT_CORRECTION, APPROVE_CORRECTION, REJECT_CORRECTION,
                     REQUEST_REDRIVE, REPORT_REDRIVE_RESULT, CLOSE_EXCEPTION, REOPEN_EXCEPTION],
    dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
  }) { __typename }
}
"""

ENQUEUE = """
mutation($queue: String!, $key: String!) {
  enqueueItems(queue: $queue, items: [{externalKey: $key, payload: {n: 1}}]) {
    __typename ... on EnqueuedItems { items { item { id } } }
  }
}
"""
CLAIM = """
mutation($queue: String!) {
  claimNext(queue: $queue) {
    __typename ... on Error { message }
    ... on Claim { leaseToken evidenceHash item { id exception { id version } } }
  }
}
"""
RAISE = """
mutation($input: RaiseExceptionInput!) {
  raiseException(input: $input) { __typename ... on ExceptionRaised { exception { id } } }
}
"""
DECIDE = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) { __typename ... on DecisionRecorded { decision { id } } }
}
"""
CORRECT = """
mutation($input: SubmitCorrectionInput!) {
  submitCorrection(input: $input) { __typename ... on ExceptionUpdated { exception { version } } }
}
"""
APPROVE = """
mutation($input: ApproveCorrectionInput!) { approveCorrection(input: $input) { __typename } }
"""
CLOSE = """
mutation($input: CloseExceptionInput!) { closeException(input: $input) { __typename } }
"""
REDRIVE = """
mutation($input: RequestRedriveInput!) {
  requestRedrive(input: $input) { __typename ... on RedriveQueued { redriveKey } }
}
"""

STALE = "... on StaleLease { itemId }"
ASSIGN = """
mutation($input: AssignItemInput!) { assignItem(input: $input) { __typename } }
"""
HOLD = """
mutation($input: HoldItemInput!) { holdItem(input: $input) { __typename } }
"""
# Far enough ahead for the whole table, within the 366 days a hold or assignment may last.
UNTIL = (datetime.now(UTC) + timedelta(days=30)).isoformat()


@dataclass
class World:
    http: httpx.AsyncClient
    owner: asyncpg.Connection
    # tokens[scope][role]: the same user per role, scoped to team a ("in") or team b ("out").
    tokens: dict[str, dict[str, str]]
    # Unscoped helpers that build what a case needs.
    admin: str
    integration: str
    reviewer: str
    approver: str
    # Makes the decisions a second review is asked of: never the one who reviews them.
    decider: str
    serial: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next(self) -> int:
        return next(self.serial)

    async def call(self, token: str, query: str, **variables: Any) -> dict[str, Any]:
        """A 200 without errors[]: its data."""
        return await Api(self.http).call(token, query, **variables)

    def holder(self, role: str, holding_role: str) -> str:
        """Who holds a lease for the case: the acting user (through its in-scope token) when
        its role holds such leases, otherwise a helper, whose lease the actor cannot use."""
        if role == holding_role:
            return self.tokens["in"][role]
        return self.reviewer if holding_role == "reviewer" else self.approver

    async def claimed_item(self, role: str) -> dict[str, Any]:
        await self.call(self.integration, ENQUEUE, queue="alpha", key=f"item-{self.next()}")
        claim: dict[str, Any] = (
            await self.call(self.holder(role, "reviewer"), CLAIM, queue="alpha")
        )["claimNext"]
        assert claim["__typename"] == "Claim", claim
        return claim

    async def awaiting_review(self, role: str) -> dict[str, Any]:
        """A decision of alpha that waits for its second review in alpha-senior, claimed
        there by the case's holder (the decider is someone else)."""
        decided = await self.claimed_by(self.decider, "alpha")
        rejected = await self.call(
            self.decider,
            DECIDE,
            input=decision_input(decided, "REJECT", "bad"),
        )
        assert rejected["submitDecision"]["__typename"] == "DecisionRecorded", rejected
        claim: dict[str, Any] = (
            await self.call(self.holder(role, "reviewer"), CLAIM, queue="alpha-senior")
        )["claimNext"]
        assert claim["__typename"] == "Claim", claim
        assert claim["item"]["id"] == decided["item"]["id"], claim
        return claim

    async def claimed_by(self, token: str, queue: str) -> dict[str, Any]:
        await self.call(self.integration, ENQUEUE, queue=queue, key=f"item-{self.next()}")
        claim: dict[str, Any] = (await self.call(token, CLAIM, queue=queue))["claimNext"]
        assert claim["__typename"] == "Claim", claim
        return claim

    async def decision(self) -> str:
        claim = await self.claimed_item("nobody")
        decided = await self.call(
            self.reviewer,
            DECIDE,
            input=decision_input(claim, "APPROVE", "ok"),
        )
        assert decided["submitDecision"]["__typename"] == "DecisionRecorded", decided
        decision_id: str = decided["submitDecision"]["decision"]["id"]
        return decision_id

    async def raised(self) -> str:
        raised = await self.call(self.integration, RAISE, input=raise_input(f"S{self.next()}"))
        assert raised["raiseException"]["__typename"] == "ExceptionRaised", raised
        exception_id: str = raised["raiseException"]["exception"]["id"]
        return exception_id

    async def exception_claim(self, queue: str, token: str) -> tuple[str, str, int]:
        claim = (await self.call(token, CLAIM, queue=queue))["claimNext"]
        assert claim["__typename"] == "Claim", claim
        exception = claim["item"]["exception"]
        return exception["id"], claim["leaseToken"], exception["version"]

    async def needs_review_under(self, role: str) -> tuple[str, str]:
        """A fresh exception's worth of work in a-ops, claimed; (exception id, lease)."""
        await self.raised()
        exception_id, lease, _ = await self.exception_claim(
            "alpha-ops", self.holder(role, "reviewer")
        )
        return exception_id, lease

    async def corrected(self) -> None:
        exception_id, lease = await self.needs_review_under("nobody")
        corrected = await self.call(
            self.reviewer,
            CORRECT,
            input={
                "exceptionId": exception_id,
                "leaseToken": lease,
                "reasonCode": "mismatch",
                "changes": {"legalName": "Acme Holdings Ltd"},
                "evidence": ["ticket://ops/1"],
            },
        )
        assert corrected["submitCorrection"]["__typename"] == "ExceptionUpdated", corrected

    async def awaiting_approval_under(self, role: str) -> tuple[str, str, int]:
        await self.corrected()
        return await self.exception_claim("alpha-approvals", self.holder(role, "approver"))

    async def redrive_pending(self) -> tuple[str, int]:
        exception_id, lease, version = await self.awaiting_approval_under("nobody")
        approved = await self.call(
            self.approver,
            APPROVE,
            input={"exceptionId": exception_id, "leaseToken": lease, "version": version},
        )
        assert approved["approveCorrection"]["__typename"] == "ExceptionUpdated", approved
        return exception_id, version

    async def redrive_key(self) -> str:
        exception_id, version = await self.redrive_pending()
        queued = await self.call(
            self.approver, REDRIVE, input={"exceptionId": exception_id, "version": version}
        )
        assert queued["requestRedrive"]["__typename"] == "RedriveQueued", queued
        key: str = queued["requestRedrive"]["redriveKey"]
        return key

    async def closed(self) -> str:
        exception_id, lease = await self.needs_review_under("nobody")
        closed = await self.call(
            self.reviewer,
            CLOSE,
            input={"exceptionId": exception_id, "leaseToken": lease, "closure": "OBSOLETE"},
        )
        assert closed["closeException"]["__typename"] == "ExceptionUpdated", closed
        return exception_id

    async def snapshot(self) -> dict[str, list[str]]:
        """Every row of every data table, as text, but a token's last use: any call notes
        it, refused or not (`casework token list`)."""
        return {
            name: [
                r[0]
                for r in await self.owner.fetch(
                    f"SELECT (to_jsonb(x) - 'last_used_at')::text FROM \"{name}\" AS x ORDER BY 1"
                )
            ]
            for name in await data_tables(self.owner)
        }


def raise_input(source: str, workflow: str = "wf_alpha") -> dict[str, Any]:
    return {
        "workflow": workflow,
        "sourceRecordId": source,
        "reasonCode": "mismatch",
        "detail": "The document names another legal entity.",
        "consequence": "LOW",
        "completedSteps": ["collect"],
        "evidence": ["docstore://a/1"],
    }


@dataclass(frozen=True)
class Prepared:
    variables: dict[str, Any]
    # The same call naming a thing that does not exist, and the names each call echoes.
    missing: dict[str, Any] | None = None
    echoes: tuple[str, str] | None = None


Prepare = Callable[[World, str, str], Awaitable[Prepared]]


@dataclass(frozen=True)
class Case:
    name: str
    operation: str
    permitted: frozenset[str]
    succeeded_as: str
    prepare: Prepare


def team(scope: str) -> str:
    """The acting token's own team: what it names besides the thing acted on."""
    return "alpha" if scope == "in" else "bravo"


async def configure_queue(w: World, role: str, scope: str) -> Prepared:
    ttl = 100 + w.next()
    return Prepared(
        {"input": {"name": "alpha", "leaseTtlSeconds": ttl}},
        {"input": {"name": "alpha-nope", "leaseTtlSeconds": ttl}},
        ("alpha", "alpha-nope"),
    )


async def configure_queue_escalating(w: World, role: str, scope: str) -> Prepared:
    # The queue configured is the actor's own; the escalation queue it names is team a's.
    own = team(scope)
    return Prepared(
        {"input": {"name": own, "escalationQueue": "alpha-leads"}},
        {"input": {"name": own, "escalationQueue": "alpha-nope"}},
        ("alpha-leads", "alpha-nope"),
    )


async def define_reason_code(w: World, role: str, scope: str) -> Prepared:
    code = {"code": f"c{w.next()}", "label": "Extra", "verdicts": ["APPROVE"]}
    return Prepared(
        {"input": {"queue": "alpha", **code}},
        {"input": {"queue": "alpha-nope", **code}},
        ("alpha", "alpha-nope"),
    )


async def configure_workflow(w: World, role: str, scope: str) -> Prepared:
    attempts = 1 + w.next() % 50
    return Prepared(
        {"input": {"name": "wf_alpha", "redriveMaxAttempts": attempts}},
        {"input": {"name": "wf_nope", "redriveMaxAttempts": attempts}},
        ("wf_alpha", "wf_nope"),
    )


async def configure_workflow_approvals(w: World, role: str, scope: str) -> Prepared:
    # Naming the actor's own approval queue: out of scope, the name is taken (the one thing
    # a namespace of names tells); no pair, since a missing workflow would be created.
    return Prepared({"input": {"name": "wf_alpha", "approvalQueue": f"{team(scope)}-approvals"}})


async def define_exception_reason(w: World, role: str, scope: str) -> Prepared:
    own = team(scope)
    reason = {
        "code": f"r{w.next()}",
        "label": "Another",
        "ownerRole": f"{own}-ops",
        "escalationOwnerRole": f"{own}-leads",
        "allowedActions": ["ATTACH_EVIDENCE", "CLOSE_EXCEPTION"],
        "dueSeconds": DUE,
    }
    return Prepared(
        {"input": {"workflow": "wf_alpha", **reason}},
        {"input": {"workflow": "wf_nope", **reason}},
        ("wf_alpha", "wf_nope"),
    )


async def enqueue_items(w: World, role: str, scope: str) -> Prepared:
    items = [{"externalKey": f"new-{w.next()}", "payload": {"n": 2}}]
    return Prepared(
        {"queue": "alpha", "items": items},
        {"queue": "alpha-nope", "items": items},
        ("alpha", "alpha-nope"),
    )


async def claim_next(w: World, role: str, scope: str) -> Prepared:
    await w.call(w.integration, ENQUEUE, queue="alpha", key=f"claimable-{w.next()}")
    return Prepared({"queue": "alpha"}, {"queue": "alpha-nope"}, ("alpha", "alpha-nope"))


async def lease(w: World, role: str, scope: str) -> Prepared:
    claim = await w.claimed_item(role)
    item_id = claim["item"]["id"]
    return Prepared(
        {"itemId": item_id, "leaseToken": claim["leaseToken"]},
        {"itemId": NO_ITEM, "leaseToken": claim["leaseToken"]},
        (item_id, NO_ITEM),
    )


async def submit_decision(w: World, role: str, scope: str) -> Prepared:
    claim = await w.claimed_item(role)
    item_id = claim["item"]["id"]
    decision = {
        "leaseToken": claim["leaseToken"],
        "verdict": "APPROVE",
        "reasonCode": "ok",
        "evidenceHash": claim["evidenceHash"],
    }
    return Prepared(
        {"input": {"itemId": item_id, **decision}},
        {"input": {"itemId": NO_ITEM, **decision}},
        (item_id, NO_ITEM),
    )


async def second_review(w: World, role: str, scope: str, **answer: str) -> Prepared:
    claim = await w.awaiting_review(role)
    item_id = claim["item"]["id"]
    given = {"leaseToken": claim["leaseToken"], "evidenceHash": claim["evidenceHash"], **answer}
    return Prepared(
        {"input": {"itemId": item_id, **given}},
        {"input": {"itemId": NO_ITEM, **given}},
        (item_id, NO_ITEM),
    )


async def record_qa_result(w: World, role: str, scope: str) -> Prepared:
    # A decision copied for QA into alpha-senior as decision_submit copies a sampled one
    # (tests/integration/test_qa_sampling.py proves the copying), ahead of anything else
    # waiting there; then claimed by whoever holds the case's lease. The decision is made by
    # someone other than that holder: the claim never hands a copy to its decider.
    holder = w.holder(role, "reviewer")
    decider = w.tokens["in"]["reviewer"] if holder == w.reviewer else w.reviewer
    await w.call(w.integration, ENQUEUE, queue="alpha", key=f"item-{w.next()}")
    claim = (await w.call(decider, CLAIM, queue="alpha"))["claimNext"]
    assert claim["__typename"] == "Claim", claim
    decided = await w.call(
        decider,
        DECIDE,
        input=decision_input(claim, "APPROVE", "ok"),
    )
    assert decided["submitDecision"]["__typename"] == "DecisionRecorded", decided
    decision_id = int(decided["submitDecision"]["decision"]["id"])
    copy_id = await w.owner.fetchval(
        "INSERT INTO review_items (origin_queue, queue, external_key, priority, payload, "
        "evidence_hash, kind, barred_claimer, qa_of) "
        "SELECT 'alpha-senior', 'alpha-senior', 'qa-of-decision-' || d.id, 1000000, '{}', "
        "d.evidence_hash, 'qa', d.reviewer, d.id FROM review_decisions AS d WHERE d.id = $1 "
        "RETURNING id",
        decision_id,
    )
    claim = (await w.call(holder, CLAIM, queue="alpha-senior"))["claimNext"]
    assert claim["__typename"] == "Claim", claim
    item_id = claim["item"]["id"]
    assert item_id == str(copy_id), claim
    answer = {"leaseToken": claim["leaseToken"], "agrees": True, "reasonCode": "qa_ok"}
    return Prepared(
        {"input": {"itemId": item_id, **answer}},
        {"input": {"itemId": NO_ITEM, **answer}},
        (item_id, NO_ITEM),
    )


async def confirm_decision(w: World, role: str, scope: str) -> Prepared:
    return await second_review(w, role, scope)


async def override_decision(w: World, role: str, scope: str) -> Prepared:
    return await second_review(w, role, scope, verdict="APPROVE", reasonCode="ok")


async def assign_item(w: World, role: str, scope: str) -> Prepared:
    await w.call(w.integration, ENQUEUE, queue="alpha", key=f"assignable-{w.next()}")
    item_id = await newest_item(w)
    # reviewer-1's in-scope token covers team a's queues: the assignee is one of theirs.
    return on_item(item_id, reviewer="reviewer-1", until=UNTIL)


async def unassign_item(w: World, role: str, scope: str) -> Prepared:
    await w.call(w.integration, ENQUEUE, queue="alpha", key=f"assigned-{w.next()}")
    item_id = await newest_item(w)
    await assigned_to_reviewer_1(w, item_id)
    return on_item(item_id)


async def assigned_to_reviewer_1(w: World, item_id: str) -> None:
    """Team a's manager assigns the item to reviewer-1."""
    assigned = await w.call(
        w.tokens["in"]["manager"], ASSIGN, input={"itemId": item_id, "reviewer": "reviewer-1"}
    )
    assert assigned["assignItem"]["__typename"] == "ItemAssigned", assigned


async def revoke_lease(w: World, role: str, scope: str) -> Prepared:
    claim = await w.claimed_item("nobody")
    item_id = claim["item"]["id"]
    return on_item(item_id, reason="Handed to another desk.")


async def hold_item(w: World, role: str, scope: str) -> Prepared:
    claim = await w.claimed_item(role)
    item_id = claim["item"]["id"]
    hold = {"leaseToken": claim["leaseToken"], "until": UNTIL, "reason": "waiting"}
    return on_item(item_id, **hold)


async def resume_item(w: World, role: str, scope: str) -> Prepared:
    claim = await w.claimed_item("nobody")
    item_id = claim["item"]["id"]
    hold = {"itemId": item_id, "leaseToken": claim["leaseToken"], "until": UNTIL}
    held = await w.call(w.reviewer, HOLD, input={**hold, "reason": "waiting"})
    assert held["holdItem"]["__typename"] == "ItemHeld", held
    return on_item(item_id)


async def fresh_item(w: World) -> str:
    await w.call(w.integration, ENQUEUE, queue="alpha", key=f"bulk-{w.next()}")
    return await newest_item(w)


def on_items(item_id: str, **rest: Any) -> Prepared:
    return Prepared(
        {"input": {"items": {"itemIds": [item_id]}, **rest}},
        {"input": {"items": {"itemIds": [NO_ITEM]}, **rest}},
        (item_id, NO_ITEM),
    )


async def bulk_release(w: World, role: str, scope: str) -> Prepared:
    item_id = await fresh_item(w)
    await assigned_to_reviewer_1(w, item_id)
    return on_items(item_id)


async def bulk_assign(w: World, role: str, scope: str) -> Prepared:
    return on_items(await fresh_item(w), reviewer="reviewer-1", until=UNTIL)


async def bulk_move(w: World, role: str, scope: str) -> Prepared:
    # The destination is the actor's own: out of scope, only the items are another team's.
    return on_items(await fresh_item(w), toQueue=f"{team(scope)}-senior")


async def bulk_hold(w: World, role: str, scope: str) -> Prepared:
    return on_items(await fresh_item(w), until=UNTIL, reason="waiting")


async def bulk_hold_by_filter(w: World, role: str, scope: str) -> Prepared:
    await fresh_item(w)
    hold = {"until": UNTIL, "reason": "waiting"}
    return Prepared(
        {"input": {"items": {"filter": {"queue": "alpha", "state": "PENDING"}}, **hold}},
        {"input": {"items": {"filter": {"queue": "alpha-nope", "state": "PENDING"}}, **hold}},
        ("alpha", "alpha-nope"),
    )


async def define_hold_reason(w: World, role: str, scope: str) -> Prepared:
    return on("queue", "alpha", "alpha-nope", code=f"h{w.next()}", label="Waiting for a document")


def on(field: str, found: str, missing: str, **rest: Any) -> Prepared:
    """The same input, on team a's `found` and on a `missing` one that does not exist."""
    return Prepared(
        {"input": {field: found, **rest}},
        {"input": {field: missing, **rest}},
        (found, missing),
    )


def on_item(item_id: str, **rest: Any) -> Prepared:
    return on("itemId", item_id, NO_ITEM, **rest)


async def newest_item(w: World) -> str:
    newest = await w.owner.fetchval("SELECT max(id) FROM review_items WHERE queue = 'alpha'")
    return str(newest)


async def overturn_decision(w: World, role: str, scope: str) -> Prepared:
    return on("decisionId", await w.decision(), NO_ITEM, reasonCode="bad")


async def add_note(w: World, role: str, scope: str) -> Prepared:
    enqueued = await w.call(w.integration, ENQUEUE, queue="alpha", key=f"noted-{w.next()}")
    item_id = enqueued["enqueueItems"]["items"][0]["item"]["id"]
    return on_item(item_id, body="Seen this applicant before.")


async def raise_exception(w: World, role: str, scope: str) -> Prepared:
    source = f"R{w.next()}"
    return Prepared(
        {"input": raise_input(source)},
        {"input": raise_input(source, "wf_nope")},
        ("wf_alpha", "wf_nope"),
    )


def on_exception(exception_id: str, **rest: Any) -> Prepared:
    return on("exceptionId", exception_id, NO_EXCEPTION, **rest)


async def attach_evidence(w: World, role: str, scope: str) -> Prepared:
    exception_id, lease = await w.needs_review_under(role)
    return on_exception(exception_id, leaseToken=lease, evidence=["ticket://ops/2"])


async def submit_correction(w: World, role: str, scope: str) -> Prepared:
    exception_id, lease = await w.needs_review_under(role)
    return on_exception(
        exception_id,
        leaseToken=lease,
        reasonCode="mismatch",
        changes={"legalName": "Acme Holdings Ltd"},
        evidence=["ticket://ops/3"],
    )


async def close_exception(w: World, role: str, scope: str) -> Prepared:
    exception_id, lease = await w.needs_review_under(role)
    return on_exception(exception_id, leaseToken=lease, closure="DUPLICATE")


async def approve_correction(w: World, role: str, scope: str) -> Prepared:
    exception_id, lease, version = await w.awaiting_approval_under(role)
    return on_exception(exception_id, leaseToken=lease, version=version)


async def reject_correction(w: World, role: str, scope: str) -> Prepared:
    exception_id, lease, _ = await w.awaiting_approval_under(role)
    return on_exception(exception_id, leaseToken=lease, reason="The evidence is unsigned.")


async def request_redrive(w: World, role: str, scope: str) -> Prepared:
    exception_id, version = await w.redrive_pending()
    return on_exception(exception_id, version=version)


async def request_redrive_again(w: World, role: str, scope: str) -> Prepared:
    # The redrive exists already: its key is told only to those who may see the exception.
    exception_id, version = await w.redrive_pending()
    queued = await w.call(
        w.approver, REDRIVE, input={"exceptionId": exception_id, "version": version}
    )
    assert queued["requestRedrive"]["__typename"] == "RedriveQueued", queued
    return on_exception(exception_id, version=version)


async def report_redrive_result(w: World, role: str, scope: str) -> Prepared:
    key = await w.redrive_key()
    return on("redriveKey", key, key.rsplit(":", 2)[0] + ":NOPE:v1", succeeded=True)


async def reopen_exception(w: World, role: str, scope: str) -> Prepared:
    return on_exception(await w.closed(), reason="The supplier sent a new document.")


ACTION = "... on InvalidTransition { state action } " + STALE
ADMIN, INTEGRATION = frozenset({"admin"}), frozenset({"integration"})
EVERY_ROLE = frozenset(ROLES)
REVIEWER, APPROVER = frozenset({"reviewer"}), frozenset({"approver"})
REVIEWER_OR_APPROVER = REVIEWER | APPROVER
MANAGER = frozenset({"manager"})

CASES = [
    Case(
        "configureQueue",
        with_input("configureQueue", "ConfigureQueueInput"),
        ADMIN,
        "QueueConfigured",
        configure_queue,
    ),
    Case(
        "configureQueue.escalationQueue",
        with_input("configureQueue", "ConfigureQueueInput"),
        ADMIN,
        "QueueConfigured",
        configure_queue_escalating,
    ),
    Case(
        "defineReasonCode",
        with_input("defineReasonCode", "DefineReasonCodeInput"),
        ADMIN,
        "ReasonCodeDefined",
        define_reason_code,
    ),
    Case(
        "configureWorkflow",
        with_input("configureWorkflow", "ConfigureWorkflowInput"),
        ADMIN,
        "WorkflowConfigured",
        configure_workflow,
    ),
    Case(
        "configureWorkflow.approvalQueue",
        with_input("configureWorkflow", "ConfigureWorkflowInput"),
        ADMIN,
        "WorkflowConfigured",
        configure_workflow_approvals,
    ),
    Case(
        "defineExceptionReason",
        with_input("defineExceptionReason", "DefineExceptionReasonInput"),
        ADMIN,
        "ExceptionReasonDefined",
        define_exception_reason,
    ),
    Case(
        "enqueueItems",
        mutation(
            "enqueueItems",
            "$queue: String!, $items: [NewItemInput!]!",
            "queue: $queue, items: $items",
        ),
        INTEGRATION,
        "EnqueuedItems",
        enqueue_items,
    ),
    Case(
        "claimNext",
        mutation("claimNext", "$queue: String!", "queue: $queue"),
        REVIEWER,
        "Claim",
        claim_next,
    ),
    Case(
        "renewLease",
        mutation(
            "renewLease",
            "$itemId: ID!, $leaseToken: String!",
            "itemId: $itemId, leaseToken: $leaseToken",
            STALE,
        ),
        REVIEWER,
        "LeaseRenewed",
        lease,
    ),
    Case(
        "releaseLease",
        mutation(
            "releaseLease",
            "$itemId: ID!, $leaseToken: String!",
            "itemId: $itemId, leaseToken: $leaseToken",
            STALE,
        ),
        REVIEWER,
        "LeaseReleased",
        lease,
    ),
    Case(
        "submitDecision",
        with_input("submitDecision", "SubmitDecisionInput", STALE),
        REVIEWER,
        "DecisionRecorded",
        submit_decision,
    ),
    Case(
        "confirmDecision",
        with_input("confirmDecision", "ConfirmDecisionInput", STALE),
        REVIEWER,
        "DecisionRecorded",
        confirm_decision,
    ),
    Case(
        "overrideDecision",
        with_input("overrideDecision", "OverrideDecisionInput", STALE),
        REVIEWER,
        "DecisionRecorded",
        override_decision,
    ),
    Case(
        "recordQaResult",
        with_input("recordQaResult", "RecordQaResultInput", STALE),
        REVIEWER,
        "QaResultRecorded",
        record_qa_result,
    ),
    Case(
        "assignItem",
        with_input("assignItem", "AssignItemInput"),
        MANAGER,
        "ItemAssigned",
        assign_item,
    ),
    Case(
        "unassignItem",
        with_input("unassignItem", "UnassignItemInput"),
        MANAGER,
        "ItemUnassigned",
        unassign_item,
    ),
    Case(
        "revokeLease",
        with_input("revokeLease", "RevokeLeaseInput"),
        MANAGER,
        "LeaseRevoked",
        revoke_lease,
    ),
    Case(
        "holdItem",
        with_input("holdItem", "HoldItemInput", STALE),
        REVIEWER,
        "ItemHeld",
        hold_item,
    ),
    Case(
        "resumeItem",
        with_input("resumeItem", "ResumeItemInput"),
        MANAGER | REVIEWER,
        "ItemResumed",
        resume_item,
    ),
    Case(
        "defineHoldReason",
        with_input("defineHoldReason", "DefineHoldReasonInput"),
        ADMIN,
        "HoldReasonDefined",
        define_hold_reason,
    ),
    Case(
        "overturnDecision",
        with_input("overturnDecision", "OverturnDecisionInput"),
        APPROVER,
        "DecisionRecorded",
        overturn_decision,
    ),
    Case(
        "addNote",
        with_input("addNote", "AddNoteInput", "... on NotFound { id }"),
        EVERY_ROLE,
        "NoteAdded",
        add_note,
    ),
    Case(
        "raiseException",
        with_input("raiseException", "RaiseExceptionInput"),
        INTEGRATION,
        "ExceptionRaised",
        raise_exception,
    ),
    Case(
        "attachEvidence",
        with_input("attachEvidence", "AttachEvidenceInput", ACTION),
        REVIEWER,
        "ExceptionUpdated",
        attach_evidence,
    ),
    Case(
        "submitCorrection",
        with_input("submitCorrection", "SubmitCorrectionInput", ACTION),
        REVIEWER,
        "ExceptionUpdated",
        submit_correction,
    ),
    Case(
        "closeException",
        with_input("closeException", "CloseExceptionInput", ACTION),
        REVIEWER,
        "ExceptionUpdated",
        close_exception,
    ),
    Case(
        "approveCorrection",
        with_input("approveCorrection", "ApproveCorrectionInput", ACTION),
        APPROVER,
        "ExceptionUpdated",
        approve_correction,
    ),
    Case(
        "rejectCorrection",
        with_input("rejectCorrection", "RejectCorrectionInput", ACTION),
        APPROVER,
        "ExceptionUpdated",
        reject_correction,
    ),
    Case(
        "requestRedrive",
        with_input(
            "requestRedrive",
            "RequestRedriveInput",
            "... on InvalidTransition { state action } ... on AlreadyQueued { redriveKey }",
        ),
        REVIEWER_OR_APPROVER,
        "RedriveQueued",
        request_redrive,
    ),
    Case(
        "requestRedrive.again",
        with_input(
            "requestRedrive",
            "RequestRedriveInput",
            "... on InvalidTransition { state action } ... on AlreadyQueued { redriveKey }",
        ),
        REVIEWER_OR_APPROVER,
        "AlreadyQueued",
        request_redrive_again,
    ),
    Case(
        "reportRedriveResult",
        with_input(
            "reportRedriveResult",
            "ReportRedriveResultInput",
            "... on InvalidTransition { state action }",
        ),
        INTEGRATION,
        "RedriveResultRecorded",
        report_redrive_result,
    ),
    Case(
        "reopenException",
        with_input("reopenException", "ReopenExceptionInput", ACTION),
        REVIEWER_OR_APPROVER,
        "ExceptionUpdated",
        reopen_exception,
    ),
]

BULK_ERRORS = "... on NotFound { id } ... on InvalidHoldReason { queue code }"
# Last: a filter over alpha's waiting items holds what earlier cases left waiting there.
CASES += [
    Case(
        "bulkRelease",
        with_input("bulkRelease", "BulkReleaseInput", BULK_ERRORS),
        MANAGER,
        "BulkApplied",
        bulk_release,
    ),
    Case(
        "bulkAssign",
        with_input("bulkAssign", "BulkAssignInput", BULK_ERRORS),
        MANAGER,
        "BulkApplied",
        bulk_assign,
    ),
    Case(
        "bulkMove",
        with_input("bulkMove", "BulkMoveInput", BULK_ERRORS),
        MANAGER,
        "BulkApplied",
        bulk_move,
    ),
    Case(
        "bulkHold",
        with_input("bulkHold", "BulkHoldInput", BULK_ERRORS),
        MANAGER,
        "BulkApplied",
        bulk_hold,
    ),
    Case(
        "bulkHold.filter",
        with_input("bulkHold", "BulkHoldInput", BULK_ERRORS),
        MANAGER,
        "BulkApplied",
        bulk_hold_by_filter,
    ),
]

# A missing workflow named with an approval queue would be created: no pair exists.
NO_PAIR = {"configureWorkflow.approvalQueue"}

SUCCESS_TYPES = {case.succeeded_as for case in CASES} | {"AlreadyQueued"}


def normalized(answer: dict[str, Any], echoed: str) -> Any:
    """The answer with the id or name it echoes (in text, or as StaleLease's itemId number)
    replaced by a placeholder."""
    text = re.sub(rf"(?<![\w-]){re.escape(echoed)}(?![\w-])", "<named>", json.dumps(answer))
    return json.loads(text.replace('"itemId": <named>', '"itemId": "<named>"'))


@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    pairs: dict[str, list[str]] = field(default_factory=dict)
    # role -> scope -> what the reads answered.
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)


@pytest.fixture(scope="module")
async def outcome(pg_server: str, template_database: str) -> AsyncIterator[Outcome]:
    """Runs the whole table once: one database, one server process."""
    name = await pg.clone_database(pg_server, template_database)
    test_database = TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    pool = await create_pool(test_database.owner_dsn, min_size=1, max_size=2)
    owner_db = Database(pool, Queries(pg.QUERIES_DIR))
    owner = await connect(test_database.owner_dsn)
    try:

        async def token(user: str, role: Role, queues: list[str]) -> str:
            return await create_token(owner_db, user=user, role=role, queues=queues)

        def queues_of(t: str) -> list[str]:
            return [q.format(t=t) for q in TEAM_QUEUES]

        helper_queues = queues_of("alpha") + queues_of("bravo")
        tokens: dict[str, dict[str, str]] = {"in": {}, "out": {}}
        for role in Role:
            tokens["in"][role.value] = await token(f"{role.value}-1", role, queues_of("alpha"))
            tokens["out"][role.value] = await token(f"{role.value}-1", role, queues_of("bravo"))
        admin = await token("setup-admin", Role.ADMIN, [])
        async with (
            casework_serve_process(serve_env(test_database), "--no-worker") as served,
            httpx.AsyncClient(base_url=served.url, timeout=30) as http,
        ):
            world = World(
                http,
                owner,
                tokens,
                admin=admin,
                integration=await token("setup-integration", Role.INTEGRATION, []),
                reviewer=await token("setup-reviewer", Role.REVIEWER, helper_queues),
                approver=await token("setup-approver", Role.APPROVER, []),
                decider=await token("setup-decider", Role.REVIEWER, helper_queues),
            )
            for t in ("alpha", "bravo"):
                data = await world.call(
                    admin,
                    TEAM_SETUP,
                    t=t,
                    senior=f"{t}-senior",
                    ops=f"{t}-ops",
                    leads=f"{t}-leads",
                    approvals=f"{t}-approvals",
                    workflow=f"wf_{t}",
                )
                assert all(v["__typename"] != "NotPermitted" for v in data.values()), data
                assert all(
                    "Configured" in v["__typename"] or "Defined" in v["__typename"]
                    for v in data.values()
                ), data
            outcome = await run_table(world)
            await run_reads(world, outcome)
            yield outcome
    finally:
        await owner.close()
        await pool.close()
        await pg.drop_database(pg_server, name)


async def run_table(world: World) -> Outcome:
    outcome = Outcome()
    for case in CASES:
        for role in ROLES:
            for scope in SCOPES:
                await run_one(world, outcome, case, role, scope)
    return outcome


async def run_one(world: World, outcome: Outcome, case: Case, role: str, scope: str) -> None:
    where = f"{case.name} as {role} ({scope} of scope)"
    prepared = await case.prepare(world, role, scope)
    token = world.tokens[scope][role]
    before = await world.snapshot()
    answer = (await world.call(token, case.operation, **prepared.variables))["result"]
    if scope == "in" and role in case.permitted:
        if answer["__typename"] != case.succeeded_as:
            outcome.problems.append(f"{where}: expected {case.succeeded_as}, got {answer}")
        return
    if answer["__typename"] in SUCCESS_TYPES or "message" not in answer:
        outcome.problems.append(f"{where}: expected a refusal, got {answer}")
    changed = [t for t, rows in (await world.snapshot()).items() if rows != before.get(t)]
    if changed:
        outcome.problems.append(f"{where}: refused ({answer}) but changed {changed}")
    if scope == "out" and role in case.permitted and prepared.missing is not None:
        assert prepared.echoes is not None
        missing = (await world.call(token, case.operation, **prepared.missing))["result"]
        theirs = normalized(answer, prepared.echoes[0])
        nothing = normalized(missing, prepared.echoes[1])
        if theirs != nothing:
            outcome.pairs.setdefault(case.name, []).append(
                f"{role}: out of scope {answer} / missing {missing}"
            )


READS = """
query($queue: String!, $item: ID!, $decision: ID!, $exception: ID!) {
  queue(name: $queue) { name }
  item(id: $item) { id }
  decision(id: $decision) { id }
  exception(id: $exception) { id }
  exceptions(filter: {workflow: "wf_alpha"}) { edges { node { id } } }
  workflows { name }
  queues { name }
}
"""


async def run_reads(world: World, outcome: Outcome) -> None:
    """Each role, in and out of scope, reads team alpha's things by name and id, and the
    same reads name things that do not exist."""
    decision_id = await world.decision()
    item_id = (await world.call(world.admin, DECISION_ITEM, id=decision_id))["decision"]["item"]
    exception_id = await world.raised()
    real = {
        "queue": "alpha",
        "item": item_id["id"],
        "decision": decision_id,
        "exception": exception_id,
    }
    missing = {
        "queue": "alpha-nope",
        "item": NO_ITEM,
        "decision": NO_ITEM,
        "exception": NO_EXCEPTION,
    }
    for role in ROLES:
        outcome.reads[role] = {
            scope: await world.call(world.tokens[scope][role], READS, **real) for scope in SCOPES
        }
        outcome.reads[role]["missing"] = await world.call(
            world.tokens["out"][role], READS, **missing
        )


DECISION_ITEM = "query($id: ID!) { decision(id: $id) { item { id } } }"


@pytest.mark.parametrize("role", ROLES)
def test_reads_out_of_scope_are_the_reads_of_nothing(outcome: Outcome, role: str) -> None:
    answers = outcome.reads[role]
    inside, outside, nothing = answers["in"], answers["out"], answers["missing"]
    # In scope, every read finds team alpha's things.
    assert inside["queue"] == {"name": "alpha"}, inside
    assert inside["item"] is not None, inside
    assert inside["decision"] is not None, inside
    assert inside["exception"] is not None, inside
    assert inside["exceptions"]["edges"], inside
    assert "wf_alpha" in {w["name"] for w in inside["workflows"]}, inside
    # Out of scope, each is what a read of a missing thing gets.
    assert outside == nothing, (outside, nothing)
    assert (outside["queue"], outside["item"], outside["decision"], outside["exception"]) == (
        None,
        None,
        None,
        None,
    )
    assert outside["exceptions"]["edges"] == []
    assert {w["name"] for w in outside["workflows"]} == {"wf_bravo"}
    assert {q["name"] for q in outside["queues"]} == {q.format(t="bravo") for q in TEAM_QUEUES}


def test_every_mutation_every_role_in_and_out_of_scope_and_refusals_change_nothing(
    outcome: Outcome,
) -> None:
    assert not outcome.problems, "\n".join(outcome.problems)


@pytest.mark.parametrize(
    "case",
    [case.name for case in CASES if case.name not in NO_PAIR],
)
def test_out_of_scope_is_answered_as_nonexistent(outcome: Outcome, case: str) -> None:
    assert case not in outcome.pairs, "\n".join(outcome.pairs[case])
