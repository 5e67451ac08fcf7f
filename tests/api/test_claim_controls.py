"""The claim controls over HTTP, as a manager's dashboard and a reviewer's console send
them: assignment, lease limits, revocation, holds and due times, each answer a member of
its result union."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, ENQUEUE, enqueue

ANSWER = "__typename ... on Error { message }"
ITEM_FIELDS = (
    "id queue priority state overdue dueAt hold { until reason } assignment { reviewer until }"
)
ITEM = "item { " + ITEM_FIELDS + " }"
READ_ITEM = "query($id: ID!) { item(id: $id) { " + ITEM_FIELDS + " } }"

ASSIGN = f"""
mutation($input: AssignItemInput!) {{
  assignItem(input: $input) {{ {ANSWER} ... on ItemAssigned {{ {ITEM} }}
    ... on InvalidInput {{ field }} ... on ItemNotWaiting {{ itemId state }} }}
}}
"""
UNASSIGN = f"""
mutation($input: UnassignItemInput!) {{
  unassignItem(input: $input) {{ {ANSWER} ... on ItemUnassigned {{ {ITEM} }}
    ... on NotAssigned {{ itemId }} }}
}}
"""
REVOKE = f"""
mutation($input: RevokeLeaseInput!) {{
  revokeLease(input: $input) {{ {ANSWER} ... on LeaseRevoked {{ owner {ITEM} }}
    ... on NotLeased {{ itemId }} }}
}}
"""
HOLD = f"""
mutation($input: HoldItemInput!) {{
  holdItem(input: $input) {{ {ANSWER} ... on ItemHeld {{ {ITEM} }}
    ... on InvalidHoldReason {{ queue code }} ... on StaleLease {{ itemId }}
    ... on InvalidInput {{ field }} }}
}}
"""
RESUME = f"""
mutation($input: ResumeItemInput!) {{
  resumeItem(input: $input) {{ {ANSWER} ... on ItemResumed {{ {ITEM} }}
    ... on NotHeld {{ itemId }} }}
}}
"""
DEFINE_HOLD_REASON = f"""
mutation($input: DefineHoldReasonInput!) {{
  defineHoldReason(input: $input) {{ {ANSWER}
    ... on HoldReasonDefined {{ queue holdReason {{ code label }} }} }}
}}
"""
CONFIGURE = f"""
mutation($input: ConfigureQueueInput!) {{
  configureQueue(input: $input) {{ {ANSWER} ... on InvalidInput {{ field }}
    ... on QueueConfigured {{ queue {{ name maxLeasesPerReviewer dueSeconds
      dueSecondsByPriority {{ minPriority dueSeconds }} holdPausesDue overdueQueue
      overduePriorityBoost }} }} }}
}}
"""
CLAIM_OR_LIMIT = """
mutation($queue: String!) {
  claimNext(queue: $queue) {
    __typename ... on Error { message }
    ... on Claim { leaseToken leaseExpiresAt item { id } }
    ... on LeaseLimitReached { limit held { leaseToken leaseExpiresAt item { id evidenceHash } } }
  }
}
"""
ME = "{ me { user leases { leaseToken leaseExpiresAt item { id queue } } } }"
STATS = """
{ queue(name: "kyc") {
    stats { pending leased held assigned overdue }
    holdReasons { code label }
    measures { holds { reason label items nextEndsAt } }
} }
"""


def later(hours: float = 1) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


def same_instant(a: str, b: str) -> bool:
    return datetime.fromisoformat(a) == datetime.fromisoformat(b)


async def result(gql: GraphQL, token: str, query: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    data: dict[str, Any] = next(iter(body["data"].values()))
    return data


async def configure(gql: GraphQL, tokens: Tokens, **settings: Any) -> dict[str, Any]:
    configured = await result(gql, tokens.admin, CONFIGURE, input={"name": "kyc", **settings})
    assert configured["__typename"] == "QueueConfigured", configured
    queue: dict[str, Any] = configured["queue"]
    return queue


async def test_a_manager_assigns_and_unassigns_and_only_the_assignee_claims(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    until = later()

    assigned = await result(
        gql,
        tokens.manager,
        ASSIGN,
        input={"itemId": item["id"], "reviewer": "rita", "until": until},
    )

    assert assigned["__typename"] == "ItemAssigned", assigned
    assert assigned["item"]["assignment"]["reviewer"] == "rita"
    assert same_instant(assigned["item"]["assignment"]["until"], until)
    assert (await result(gql, tokens.other_reviewer, CLAIM, queue=kyc))[
        "__typename"
    ] == "QueueEmpty"
    unassigned = await result(gql, tokens.manager, UNASSIGN, input={"itemId": item["id"]})
    assert unassigned["__typename"] == "ItemUnassigned"
    assert unassigned["item"]["assignment"] is None
    again = await result(gql, tokens.manager, UNASSIGN, input={"itemId": item["id"]})
    assert again == {
        "__typename": "NotAssigned",
        "message": "this item is not assigned to anyone now; nothing was written",
        "itemId": item["id"],
    }
    assert (await result(gql, tokens.other_reviewer, CLAIM, queue=kyc))["__typename"] == "Claim"


async def test_refusals_of_an_assignment_are_members_of_its_union(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    base = {"itemId": item["id"], "reviewer": "rita"}

    by_reviewer = await result(gql, tokens.reviewer, ASSIGN, input=base)
    nobody = await result(gql, tokens.manager, ASSIGN, input={**base, "reviewer": "nobody"})
    past = await result(
        gql, tokens.manager, ASSIGN, input={**base, "until": "2001-01-01T00:00:00Z"}
    )
    naive = await result(
        gql, tokens.manager, ASSIGN, input={**base, "until": "2031-01-01T00:00:00"}
    )

    assert by_reviewer["__typename"] == "NotPermitted"
    assert (nobody["__typename"], nobody["field"]) == ("InvalidInput", "reviewer")
    assert (past["__typename"], past["field"]) == ("InvalidInput", "until")
    assert (naive["__typename"], naive["field"]) == ("InvalidInput", "until")


async def test_the_lease_limit_answers_with_the_callers_own_leases(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    queue = await configure(gql, tokens, maxLeasesPerReviewer=1)
    assert queue["maxLeasesPerReviewer"] == 1
    await enqueue(gql, tokens, "cust-1", "cust-2")
    held = await result(gql, tokens.reviewer, CLAIM_OR_LIMIT, queue=kyc)

    limited = await result(gql, tokens.reviewer, CLAIM_OR_LIMIT, queue=kyc)

    assert limited["__typename"] == "LeaseLimitReached", limited
    assert limited["limit"] == 1
    [lease] = limited["held"]
    assert (lease["leaseToken"], lease["leaseExpiresAt"], lease["item"]["id"]) == (
        held["leaseToken"],
        held["leaseExpiresAt"],
        held["item"]["id"],
    )
    assert len(lease["item"]["evidenceHash"]) == 64
    # A reloaded console finds the same lease in Query.me.
    me = (await gql(tokens.reviewer, ME))["data"]["me"]
    assert [(m["leaseToken"], m["item"]["id"]) for m in me["leases"]] == [
        (held["leaseToken"], held["item"]["id"])
    ]
    assert (await gql(tokens.other_reviewer, ME))["data"]["me"]["leases"] == []
    assert (await gql(tokens.manager, ME))["data"]["me"]["leases"] == []
    # Another reviewer still claims.
    assert (await result(gql, tokens.other_reviewer, CLAIM, queue=kyc))["__typename"] == "Claim"


async def test_a_manager_revokes_a_lease(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    await enqueue(gql, tokens, "cust-1")
    held = await result(gql, tokens.reviewer, CLAIM, queue=kyc)
    revoke = {"itemId": held["item"]["id"], "reason": "Reassigned to the fraud desk."}

    by_reviewer = await result(gql, tokens.other_reviewer, REVOKE, input=revoke)
    revoked = await result(gql, tokens.manager, REVOKE, input=revoke)
    again = await result(gql, tokens.manager, REVOKE, input=revoke)

    assert by_reviewer["__typename"] == "NotPermitted"
    assert revoked["__typename"] == "LeaseRevoked", revoked
    assert (revoked["owner"], revoked["item"]["state"]) == ("rita", "PENDING")
    assert again["__typename"] == "NotLeased"
    renew = """
    mutation($itemId: ID!, $leaseToken: String!) {
      renewLease(itemId: $itemId, leaseToken: $leaseToken) { __typename }
    }"""
    stale = await result(
        gql, tokens.reviewer, renew, itemId=held["item"]["id"], leaseToken=held["leaseToken"]
    )
    assert stale["__typename"] == "StaleLease"


async def test_holds_are_placed_resumed_counted_and_measured(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    defined = await result(
        gql,
        tokens.admin,
        DEFINE_HOLD_REASON,
        input={"queue": "kyc", "code": "awaiting_customer", "label": "Waiting for the customer"},
    )
    assert defined == {
        "__typename": "HoldReasonDefined",
        "queue": "kyc",
        "holdReason": {"code": "awaiting_customer", "label": "Waiting for the customer"},
    }
    assert (
        await result(
            gql,
            tokens.manager,
            DEFINE_HOLD_REASON,
            input={"queue": "kyc", "code": "x", "label": "X"},
        )
    )["__typename"] == "NotPermitted"
    await enqueue(gql, tokens, "cust-1", "cust-2")
    held = await result(gql, tokens.reviewer, CLAIM, queue=kyc)
    hold = {
        "itemId": held["item"]["id"],
        "leaseToken": held["leaseToken"],
        "until": later(3),
        "reason": "awaiting_customer",
    }

    unknown = await result(gql, tokens.reviewer, HOLD, input={**hold, "reason": "lunch"})
    parked = await result(gql, tokens.reviewer, HOLD, input=hold)
    stale = await result(gql, tokens.reviewer, HOLD, input=hold)

    assert unknown == {
        "__typename": "InvalidHoldReason",
        "message": "hold reason 'lunch' is not in the catalogue of queue 'kyc'; "
        "nothing was written",
        "queue": "kyc",
        "code": "lunch",
    }
    assert parked["__typename"] == "ItemHeld", parked
    assert parked["item"]["hold"]["reason"] == "awaiting_customer"
    assert parked["item"]["state"] == "PENDING"
    assert stale["__typename"] == "StaleLease"
    read = (await gql(tokens.manager, STATS))["data"]["queue"]
    assert read["stats"] == {"pending": 1, "leased": 0, "held": 1, "assigned": 0, "overdue": 0}
    assert read["holdReasons"] == [
        {"code": "awaiting_customer", "label": "Waiting for the customer"}
    ]
    [counted] = read["measures"]["holds"]
    assert (counted["reason"], counted["label"], counted["items"]) == (
        "awaiting_customer",
        "Waiting for the customer",
        1,
    )
    assert same_instant(counted["nextEndsAt"], hold["until"])

    resumed = await result(gql, tokens.other_reviewer, RESUME, input={"itemId": held["item"]["id"]})
    not_held = await result(gql, tokens.manager, RESUME, input={"itemId": held["item"]["id"]})

    assert resumed["__typename"] == "ItemResumed"
    assert resumed["item"]["hold"] is None
    assert not_held["__typename"] == "NotHeld"


async def test_due_times_and_the_overdue_move_over_http(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    queue = await configure(
        gql,
        tokens,
        dueSeconds=7200,
        dueSecondsByPriority=[{"minPriority": 10, "dueSeconds": 600}],
        holdPausesDue=True,
        overdueQueue="kyc-senior",
        overduePriorityBoost=25,
    )
    assert queue == {
        "name": "kyc",
        "maxLeasesPerReviewer": None,
        "dueSeconds": 7200,
        "dueSecondsByPriority": [{"minPriority": 10, "dueSeconds": 600}],
        "holdPausesDue": True,
        "overdueQueue": "kyc-senior",
        "overduePriorityBoost": 25,
    }
    items = [
        {"externalKey": "late", "payload": {"n": 1}, "dueAt": "2020-01-01T00:00:00Z"},
        {"externalKey": "urgent", "payload": {"n": 2}, "priority": 10},
    ]
    enqueued = await gql(tokens.integration, ENQUEUE, queue="kyc", items=items)
    late, urgent = (e["item"] for e in enqueued["data"]["enqueueItems"]["items"])
    assert (await read_item(gql, tokens, late["id"]))["overdue"] is True

    # The claim moves the overdue item to kyc-senior and hands out the other.
    claimed = await result(gql, tokens.other_reviewer, CLAIM, queue=kyc)

    assert claimed["item"]["id"] == urgent["id"]
    moved = await read_item(gql, tokens, late["id"])
    # kyc-senior sets no due time: the moved item has none there.
    assert (moved["queue"], moved["priority"], moved["overdue"], moved["dueAt"]) == (
        "kyc-senior",
        25,
        False,
        None,
    )
    due = await read_item(gql, tokens, urgent["id"])
    assert due["overdue"] is False
    assert datetime.fromisoformat(due["dueAt"]) > datetime.now(UTC) + timedelta(minutes=9)
    assert datetime.fromisoformat(due["dueAt"]) < datetime.now(UTC) + timedelta(minutes=11)


async def read_item(gql: GraphQL, tokens: Tokens, item_id: str) -> dict[str, Any]:
    body = await gql(tokens.manager, READ_ITEM, id=item_id)
    assert "errors" not in body, body
    item: dict[str, Any] = body["data"]["item"]
    return item


CONTROL_STORY = """
query($id: ID!) {
  item(id: $id) {
    events(first: 50) {
      edges { node { kind actor actorRole body holdReason assignee until lease { owner } } }
    }
  }
}
"""


async def test_the_timeline_tells_the_controls_in_order_with_their_particulars(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    """Assigned, unassigned, held, resumed and revoked, read back through ReviewItem.events
    with who, why and until when, between the claims they happened around."""
    reason = await result(
        gql,
        tokens.admin,
        DEFINE_HOLD_REASON,
        input={"queue": "kyc", "code": "awaiting_customer", "label": "Awaiting the customer"},
    )
    assert reason["__typename"] == "HoldReasonDefined", reason
    [item] = await enqueue(gql, tokens, "cust-story")
    assign_until, hold_until = later(2), later(3)
    steps = [
        (tokens.manager, ASSIGN, {"itemId": item["id"], "reviewer": "rita", "until": assign_until}),
        (tokens.manager, UNASSIGN, {"itemId": item["id"]}),
    ]
    for token, mutation, arguments in steps:
        answer = await result(gql, token, mutation, input=arguments)
        assert answer["__typename"] in {"ItemAssigned", "ItemUnassigned"}, answer
    claim = await result(gql, tokens.reviewer, CLAIM, queue="kyc")
    held = await result(
        gql,
        tokens.reviewer,
        HOLD,
        input={
            "itemId": item["id"],
            "leaseToken": claim["leaseToken"],
            "until": hold_until,
            "reason": "awaiting_customer",
        },
    )
    assert held["__typename"] == "ItemHeld", held
    resumed = await result(gql, tokens.manager, RESUME, input={"itemId": item["id"]})
    assert resumed["__typename"] == "ItemResumed", resumed
    await result(gql, tokens.reviewer, CLAIM, queue="kyc")
    revoked = await result(
        gql, tokens.manager, REVOKE, input={"itemId": item["id"], "reason": "Needs a senior"}
    )
    assert revoked["__typename"] == "LeaseRevoked", revoked

    story = await gql(tokens.manager, CONTROL_STORY, id=item["id"])
    nodes = [edge["node"] for edge in story["data"]["item"]["events"]["edges"]]

    outline = [
        (n["kind"], n["actorRole"], n["body"], n["holdReason"], n["assignee"]) for n in nodes
    ]
    assert outline == [
        ("ENQUEUED", "integration", None, None, None),
        ("ASSIGNED", "manager", None, None, "rita"),
        ("UNASSIGNED", "manager", None, None, "rita"),
        ("CLAIMED", "reviewer", None, None, None),
        ("HELD", "reviewer", None, "awaiting_customer", None),
        ("RESUMED", "manager", None, "awaiting_customer", None),
        ("CLAIMED", "reviewer", None, None, None),
        ("REVOKED", "manager", "Needs a senior", None, None),
    ]
    assert same_instant(nodes[1]["until"], assign_until)
    assert same_instant(nodes[4]["until"], hold_until)
    # The revocation names whose lease it ended (rita's), and who ended it (the manager).
    assert [nodes[n]["lease"]["owner"] for n in (3, 4, 6, 7)] == ["rita"] * 4
    # A resume ends a hold, not a lease: there is none.
    assert nodes[5]["lease"] is None
    assert nodes[3]["actor"] == "rita"
    assert nodes[7]["actor"] != "rita"
