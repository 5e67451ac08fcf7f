"""What the CSV export's tests share: a download through the application's ASGI interface,
message by message (so chunks and a cut-short response can be seen), and the rows the API
gives for the same search, as the CSV writes them."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from starlette.applications import Starlette
from starlette.types import Message

from server.domain.quality.audit import timestamp
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, OVERTURN, decision_input

ITEMS_PAGE = """
query($filter: ItemSearch!, $after: String) {
  items(filter: $filter, first: 200, after: $after) {
    __typename
    ... on ItemConnection {
      pageInfo { hasNextPage endCursor }
      edges { node {
        id queue externalKey state priority createdAt dueAt
        assignment { reviewer } hold { until }
        decisions { id verdict reasonCode reviewer decidedAt status isOverturn }
      } }
    }
    ... on InvalidInput { message field }
  }
}
"""
DECISIONS_PAGE = """
query($filter: DecisionSearch!, $after: String) {
  decisions(filter: $filter, first: 200, after: $after) {
    __typename
    ... on DecisionConnection {
      pageInfo { hasNextPage endCursor }
      edges { node {
        id queue verdict reasonCode reviewer decidedAt status isOverturn note
        supersedes { id } item { externalKey }
      } }
    }
    ... on InvalidInput { message field }
  }
}
"""
SETUP_PAYOUTS = """
mutation {
  payouts: configureQueue(input: {name: "payouts"}) { __typename }
  ok: defineReasonCode(input: {queue: "payouts", code: "documents_ok", label: "Documents match",
                               verdicts: [APPROVE]}) { __typename }
  senior: defineReasonCode(input: {queue: "kyc", code: "needs_senior", label: "Needs a senior",
                                   verdicts: [ESCALATE]}) { __typename }
}
"""

# Keys a spreadsheet would take for formulas, beside ordinary ones.
FORMULA_KEYS = ("=SUM(1,2)", "+1", "-1", "@cmd")


@dataclass
class Download:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    # The response's last message said it was the last (more_body false).
    complete: bool = False

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode()

    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def rows(self) -> list[list[str]]:
        return list(csv.reader(io.StringIO(self.text, newline="")))


async def download(
    app: Starlette,
    url: str,
    token: str | None = None,
    *,
    on_chunk: Callable[[int], Awaitable[None]] | None = None,
) -> Download:
    """GET `url` as an HTTP server would call the application (ASGI 2.4, no disconnect
    listening), recording every message it sends. on_chunk(n) runs after body chunk n."""
    parts = urlsplit(url)
    headers = [(b"host", b"casework")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": parts.path,
        "raw_path": parts.path.encode(),
        "query_string": parts.query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("casework", 80),
        "state": {},
    }
    received = False
    got = Download()

    async def receive() -> Message:
        nonlocal received
        assert not received, "the export reads no more than the (empty) request body"
        received = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            got.status = message["status"]
            got.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            return
        assert not got.complete, "nothing is sent after the last chunk"
        if message["body"]:
            got.chunks.append(message["body"])
            if on_chunk is not None:
                await on_chunk(len(got.chunks))
        got.complete = not message.get("more_body", False)

    await app(scope, receive, send)
    return got


def moment(value: str | None) -> str:
    return "" if value is None else timestamp(datetime.fromisoformat(value))


def flag(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def current(decisions: list[dict[str, Any]]) -> dict[str, Any] | None:
    standing = [d for d in decisions if d["status"] != "SUPERSEDED"]
    return max(standing, key=lambda d: int(d["id"]), default=None)


def guarded(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


async def api_pages(gql: GraphQL, token: str, query: str, name: str, **filter: Any) -> list[Any]:
    """Every node the API gives for the search, page by page."""
    nodes: list[Any] = []
    after = None
    while True:
        body = await gql(token, query, filter=filter, after=after)
        assert "errors" not in body, body
        found = body["data"][name]
        assert found["__typename"].endswith("Connection"), found
        nodes += [edge["node"] for edge in found["edges"]]
        if not found["pageInfo"]["hasNextPage"]:
            return nodes
        after = found["pageInfo"]["endCursor"]


async def api_item_rows(
    gql: GraphQL, owner: asyncpg.Connection, token: str, link_base: str | None, **filter: Any
) -> list[list[str]]:
    """The items the API finds, as the CSV's rows; the origin queue and last activity,
    which the API does not show, from the table."""
    nodes = await api_pages(gql, token, ITEMS_PAGE, "items", **filter)
    stored = {
        row["id"]: row
        for row in await owner.fetch(
            "SELECT id, origin_queue, updated_at FROM review_items WHERE id = ANY($1::bigint[])",
            [int(node["id"]) for node in nodes],
        )
    }
    rows = []
    for node in nodes:
        decision = current(node["decisions"]) or {}
        row = stored[int(node["id"])]
        rows.append(
            [
                node["id"],
                node["queue"],
                row["origin_queue"],
                guarded(node["externalKey"]),
                node["state"],
                str(node["priority"]),
                moment(node["createdAt"]),
                timestamp(row["updated_at"]),
                moment(node["dueAt"]),
                (node["assignment"] or {}).get("reviewer") or "",
                moment((node["hold"] or {}).get("until")),
                decision.get("verdict", ""),
                guarded(decision.get("reasonCode", "")),
                guarded(decision.get("reviewer", "")),
                moment(decision.get("decidedAt")),
                decision.get("status", ""),
                flag(decision.get("isOverturn")),
                "" if link_base is None else f"{link_base}/console/#/item/{node['id']}",
            ]
        )
    return rows


async def api_decision_rows(
    gql: GraphQL, owner: asyncpg.Connection, token: str, **filter: Any
) -> list[list[str]]:
    """The decisions the API finds, as the CSV's rows; the item's id, which the API shows
    only for an item in the caller's queues, from the table."""
    nodes = await api_pages(gql, token, DECISIONS_PAGE, "decisions", **filter)
    item_of = {
        row["id"]: row["item_id"]
        for row in await owner.fetch(
            "SELECT id, item_id FROM review_decisions WHERE id = ANY($1::bigint[])",
            [int(node["id"]) for node in nodes],
        )
    }
    return [
        [
            node["id"],
            str(item_of[int(node["id"])]),
            node["queue"],
            guarded((node["item"] or {}).get("externalKey") or ""),
            node["verdict"],
            guarded(node["reasonCode"]),
            guarded(node["reviewer"]),
            moment(node["decidedAt"]),
            node["status"],
            flag(node["isOverturn"]),
            (node["supersedes"] or {}).get("id") or "",
            guarded(node["note"] or ""),
        ]
        for node in nodes
    ]


async def seed(gql: GraphQL, tokens: Tokens, kyc_keys: int = 10) -> None:
    """kyc: `kyc_keys` items plus the formula-like keys, four decided (one rejected, one
    later overturned, one with a formula-like note), one escalated to kyc-senior; payouts:
    two items, one decided."""
    body = await gql(tokens.admin, SETUP_PAYOUTS)
    assert {r["__typename"] for r in body["data"].values()} == {
        "QueueConfigured",
        "ReasonCodeDefined",
    }, body
    keys = [f"app-{n:02}" for n in range(kyc_keys)] + list(FORMULA_KEYS)
    items = [
        {"externalKey": key, "payload": {"k": key}, "priority": n} for n, key in enumerate(keys)
    ]
    for queue, batch in (("kyc", items), ("payouts", [{"externalKey": "pay-1", "payload": {}}])):
        body = await gql(tokens.integration, ENQUEUE, queue=queue, items=batch)
        assert body["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", body
    body = await gql(
        tokens.integration,
        ENQUEUE,
        queue="payouts",
        items=[{"externalKey": "pay-2", "payload": {}}],
    )
    assert body["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", body
    decided = []
    for verdict, reason, note in (
        ("APPROVE", "documents_ok", '=HYPERLINK("http://example.invalid")'),
        ("REJECT", "name_mismatch", None),
        ("APPROVE", "documents_ok", "checked, all fine"),
        ("ESCALATE", "needs_senior", None),
    ):
        claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
        assert claim["__typename"] == "Claim", claim
        entry = {**decision_input(claim, verdict, reason), "note": note}
        body = await gql(tokens.reviewer, DECIDE, input=entry)
        result = body["data"]["submitDecision"]
        assert result["__typename"] == "DecisionRecorded", result
        decided.append(result["decision"]["id"])
    overturn = {"decisionId": decided[2], "reasonCode": "name_mismatch", "note": "-wrong"}
    body = await gql(tokens.approver, OVERTURN, input=overturn)
    assert body["data"]["overturnDecision"]["__typename"] == "DecisionRecorded", body
    claim = (await gql(tokens.outsider, CLAIM, queue="payouts"))["data"]["claimNext"]
    body = await gql(
        tokens.outsider, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    assert body["data"]["submitDecision"]["__typename"] == "DecisionRecorded", body
