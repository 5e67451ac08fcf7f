"""The canary scan finds what it looks for: a value in a text, jsonb, bytea or text[] column
of any table, named as table.column, and nothing where there is nothing."""

from __future__ import annotations

import asyncpg

from tests.privacy.scan import find_canaries, searched_columns

CANARY = "CANARY-scan-Quillon-9931"


async def test_the_scan_finds_a_canary_in_each_kind_of_column(
    owner_conn: asyncpg.Connection,
) -> None:
    assert await find_canaries(owner_conn, [CANARY]) == []
    await owner_conn.execute(
        """CREATE TABLE scan_probe (
               plain text, document jsonb, raw bytea, many text[], raws bytea[], n integer)"""
    )
    assert await find_canaries(owner_conn, [CANARY]) == []
    searched = {(t, c) for _, t, c, _, _ in await searched_columns(owner_conn)}
    assert {("scan_probe", c) for c in ("plain", "document", "raw", "many", "raws")} <= searched
    assert ("scan_probe", "n") not in searched
    # A domain over text (short_text) is searched as text.
    assert ("review_items", "external_key") in searched

    await owner_conn.execute(
        "INSERT INTO scan_probe VALUES ($1, $2::jsonb, $3, $4, $5, 1)",
        f"before {CANARY} after",
        '{"a": {"b": "' + CANARY + '"}}',
        b"\x00\x01" + CANARY.encode() + b"\xff",
        ["x", CANARY],
        [CANARY.encode()],
    )
    assert await find_canaries(owner_conn, ["not-there", CANARY]) == [
        "scan_probe.document",
        "scan_probe.many",
        "scan_probe.plain",
        "scan_probe.raw",
        "scan_probe.raws",
    ]
