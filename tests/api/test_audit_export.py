"""ReviewItem.auditPack over HTTP and `casework export` as an operator runs it (a separate
process, a real database): the same document, the item's scope, the queue's window."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, casework, decision_input
from tests.conftest import TestDatabase

PACK = """
query($id: ID!) { item(id: $id) { id auditPack } }
"""
PACKS_OF_A_PAGE = """
query { queue(name: "kyc") { items(first: 10) { edges { node { id auditPack } } } } }
"""


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


async def enqueue(gql: GraphQL, tokens: Tokens, **payloads: Any) -> list[str]:
    items = [{"externalKey": key, "payload": payload} for key, payload in payloads.items()]
    body = await gql(tokens.integration, ENQUEUE, queue="kyc", items=items)
    return [entry["item"]["id"] for entry in body["data"]["enqueueItems"]["items"]]


async def decided_item(gql: GraphQL, tokens: Tokens) -> str:
    (item_id,) = await enqueue(gql, tokens, **{"zoë-1": {"applicant": "Zoë Ångström"}})
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    decided = await gql(
        tokens.reviewer,
        DECIDE,
        input={**decision_input(claim, "APPROVE", "documents_ok"), "note": "ok — checked"},
    )
    assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded", decided
    return str(item_id)


async def test_the_pack_is_read_within_the_items_scope_and_is_what_the_cli_writes(
    gql: GraphQL, tokens: Tokens, kyc: str, test_database: TestDatabase, tmp_path: Path
) -> None:
    item_id = await decided_item(gql, tokens)

    admin = (await gql(tokens.admin, PACK, id=item_id))["data"]["item"]["auditPack"]
    reviewer = (await gql(tokens.reviewer, PACK, id=item_id))["data"]["item"]["auditPack"]
    outsider = await gql(tokens.outsider, PACK, id=item_id)
    outsider_page = await gql(tokens.outsider, PACKS_OF_A_PAGE)
    page = await gql(tokens.admin, PACKS_OF_A_PAGE)
    to_stdout = await casework(test_database, tmp_path, f"export item {item_id}")
    to_file = await casework(
        test_database, tmp_path, f"export item {item_id} --output {tmp_path / 'pack.json'}"
    )

    assert admin["sha256"] == hashlib.sha256(canonical(admin["pack"])).hexdigest()
    assert admin["pack"]["item"]["id"] == int(item_id)
    assert admin["pack"]["decisions"][0]["note"] == "ok — checked"
    assert admin["pack"]["withheld"] == []
    assert reviewer["pack"]["withheld"] == ["exceptions_outside_token_scope", "receiver_text"]
    assert reviewer["sha256"] == hashlib.sha256(canonical(reviewer["pack"])).hexdigest()
    # Outside the item's queues, the item (and so its pack) does not exist.
    assert outsider == {"data": {"item": None}}
    assert outsider_page == {"data": {"queue": None}}
    assert page["data"]["queue"]["items"]["edges"] == [
        {"node": {"id": item_id, "auditPack": admin}}
    ]
    # The command line writes the very document, in its canonical form and a newline.
    assert to_stdout.code == 0, to_stdout.stderr
    assert to_stdout.stdout.encode() == canonical(admin) + b"\n"
    assert to_file.code == 0, to_file.stderr
    assert to_file.stdout == ""
    assert (tmp_path / "pack.json").read_bytes() == canonical(admin) + b"\n"
    assert not (tmp_path / "pack.json.partial").exists()


async def test_an_unknown_item_is_a_one_line_error(
    test_database: TestDatabase, tmp_path: Path, kyc: str
) -> None:
    unknown = await casework(test_database, tmp_path, "export item 987654")
    malformed = await casework(test_database, tmp_path, "export item abc")

    assert (unknown.code, unknown.stdout) == (2, "")
    assert unknown.stderr == "casework: error: there is no item 987654\n"
    assert malformed.code == 2
    assert "an item id is a positive whole number: 'abc'" in malformed.stderr
    assert "Traceback" not in unknown.stderr + malformed.stderr


async def test_the_queue_export_writes_a_line_per_item_enqueued_in_the_window(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    test_database: TestDatabase,
    tmp_path: Path,
    owner_conn: asyncpg.Connection,
) -> None:
    since = datetime(2026, 11, 1, tzinfo=UTC)
    until = datetime(2026, 12, 1, tzinfo=UTC)
    enqueued_at = {
        "before": since - timedelta(microseconds=1),
        "at-since": since,
        "middle": since + timedelta(days=14, hours=3),
        "last": until - timedelta(microseconds=1),
        "at-until": until,
    }
    created = await enqueue(gql, tokens, **{key: {} for key in enqueued_at})
    ids = dict(zip(enqueued_at, created, strict=True))
    for key, moment in enqueued_at.items():
        await owner_conn.execute(
            "UPDATE review_items SET created_at = $2 WHERE id = $1", int(ids[key]), moment
        )
    packs = {
        key: (await gql(tokens.admin, PACK, id=item_id))["data"]["item"]["auditPack"]
        for key, item_id in ids.items()
    }

    run = await casework(
        test_database, tmp_path, "export queue kyc --since 2026-11-01 --until 2026-12-01T00:00:00Z"
    )
    offset = await casework(
        test_database,
        tmp_path,
        "export queue kyc --since 2026-11-01T01:00:00+01:00 --until 2026-11-30T23:59:59.999999 "
        f"--output {tmp_path / 'kyc.jsonl'}",
    )

    assert run.code == 0, run.stderr
    lines = run.stdout.encode().splitlines(keepends=True)
    # Oldest id first (an enqueue creates its items in the order of their keys).
    inside = sorted(("at-since", "middle", "last"), key=lambda key: int(ids[key]))
    assert lines == [canonical(packs[key]) + b"\n" for key in inside]
    for line in lines:
        document = json.loads(line)
        assert document["sha256"] == hashlib.sha256(canonical(document["pack"])).hexdigest()
    assert run.stderr == (
        "casework export: 3 item(s) first enqueued to kyc in "
        "[2026-11-01T00:00:00.000000Z, 2026-12-01T00:00:00.000000Z)\n"
    )
    # 01:00+01:00 is midnight UTC; a time without an offset is UTC: the last item is out.
    assert offset.code == 0, offset.stderr
    assert offset.stdout == ""
    written = (tmp_path / "kyc.jsonl").read_bytes()
    assert written == b"".join(canonical(packs[key]) + b"\n" for key in inside if key != "last")


async def test_a_bad_window_or_queue_is_a_one_line_error(
    test_database: TestDatabase, tmp_path: Path, kyc: str
) -> None:
    bad_date = await casework(
        test_database, tmp_path, "export queue kyc --since yesterday --until 2026-12-01"
    )
    backwards = await casework(
        test_database, tmp_path, "export queue kyc --since 2026-12-01 --until 2026-11-01"
    )
    unknown = await casework(
        test_database, tmp_path, "export queue nope --since 2026-11-01 --until 2026-12-01"
    )
    nowhere = tmp_path / "missing" / "kyc.jsonl"
    unwritable = await casework(
        test_database,
        tmp_path,
        f"export queue kyc --since 2026-11-01 --until 2026-12-01 --output {nowhere}",
    )

    assert bad_date.code == backwards.code == unknown.code == unwritable.code == 2
    assert bad_date.stderr.splitlines()[-1] == (
        "casework export queue: error: argument --since: expected an ISO date or date and "
        "time (2026-11-01, 2026-11-01T09:30:00Z): 'yesterday'"
    )
    assert backwards.stderr.splitlines()[-1] == (
        "casework export queue: error: --since must be before --until"
    )
    assert unknown.stderr == "casework: error: there is no queue 'nope'\n"
    assert unwritable.stderr == (
        f"casework: error: cannot write {nowhere}: No such file or directory\n"
    )
    for run in (bad_date, backwards, unknown, unwritable):
        assert run.stdout == ""
        assert "Traceback" not in run.stderr
