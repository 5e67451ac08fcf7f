"""An exception's item: its audit pack holds the exception with its whole history, its
corrections and its redrives, as the tables hold them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg

from server.domain.quality import audit
from server.store.database import Database
from tests.exceptions.domain_drivers import approved_correction, event_rows


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_stored(row: asyncpg.Record) -> dict[str, Any]:
    """A row as the pack is to hold it: every column, times in UTC."""
    return {
        name: iso(value) if isinstance(value, datetime) else value for name, value in row.items()
    }


async def test_an_exception_items_pack_holds_the_exception_and_its_history(
    db: Database, owner_conn: asyncpg.Connection, supplier_workflow: str
) -> None:
    exception_id, version = await approved_correction(db, "SUP-7")
    exception = await owner_conn.fetchrow("SELECT * FROM exceptions WHERE id = $1", exception_id)
    assert exception is not None
    events = await event_rows(owner_conn, exception_id)
    corrections = await owner_conn.fetch(
        "SELECT * FROM exception_corrections WHERE exception_id = $1", exception_id
    )
    redrives = await owner_conn.fetch(
        "SELECT * FROM exception_redrives WHERE exception_id = $1", exception_id
    )

    document = (await audit.audit_packs(db, [exception["item_id"]]))[exception["item_id"]]

    assert [e["kind"] for e in events] == [
        "raised",
        "correction_submitted",
        "correction_approved",
    ]
    assert [c["changes"] for c in corrections] == [{"legalName": "Acme Holdings Ltd"}]
    (packed,) = document["pack"]["exceptions"]
    assert packed == {
        **as_stored(exception),
        "events": [as_stored(e) for e in events],
        "corrections": [as_stored(c) for c in corrections],
        "redrives": [as_stored(r) for r in redrives],
    }
    assert (packed["state"], packed["version"]) == ("redrive_pending", version)
    assert document["pack"]["item"]["kind"] == "exception"
    assert document["pack"]["decisions"] == []
