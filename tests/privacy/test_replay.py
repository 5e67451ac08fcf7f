"""Erasure reaches backups: a copy of the database taken before erasures, restored, then
`casework privacy replay`, holds no canary; replaying again changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from server.domain.model import Verdict
from server.domain.privacy.erasure import ErasureRequest, approve_erasure, replay, request_erasure
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger, LedgerEntry, LedgerError
from server.domain.privacy.receipts import ErasureReceipt
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.retention_worker import RetentionWorker
from server.store.database import Database, connect
from server.store.queries import Queries
from tests import pg
from tests.api.helpers import casework
from tests.conftest import ADMIN, TestDatabase, closing, pooled
from tests.privacy.conftest import attach_policy
from tests.privacy.erasure_helpers import (
    CARL,
    CORA,
    add_retention_class,
    canaries,
    columns_holding,
    decide_next,
    enqueue,
    readable_values,
)

DAY = 24 * 3600


@pytest.fixture
async def databases(pg_server: str, template_database: str) -> AsyncIterator[list[str]]:
    """Names of databases the test makes (the live one, its backup), dropped after it."""
    names: list[str] = []
    yield names
    for name in names:
        await pg.drop_database(pg_server, name)


def database(pg_server: str, name: str) -> TestDatabase:
    return TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))


async def set_up(db: Database, keyring: Keyring) -> None:
    """Queue kyc under a policy: cust-1 (two items, one decided) and cust-2, whose class keeps
    values one day from the enqueue."""
    assert not hasattr(await configure_queue(db, ADMIN, QueueSettings("kyc")), "message")
    defined = await define_reason_code(
        db, ADMIN, queue="kyc", code="documents_ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    assert not hasattr(defined, "message")
    await attach_policy(db, "kyc")
    await enqueue(db, keyring, "app-1", "cust-1", 1)
    await enqueue(db, keyring, "app-2", "cust-1", 2)
    await decide_next(db)


async def test_a_restore_then_replay_leaves_no_canary(
    pg_server: str,
    template_database: str,
    databases: list[str],
    queries: Queries,
    keyring: Keyring,
    tmp_path: Path,
) -> None:
    live = await pg.clone_database(pg_server, template_database)
    databases.append(live)
    ledger = ErasureLedger(tmp_path / "erasure-ledger.jsonl")
    needles = canaries(1) + canaries(2) + canaries(3)
    async with closing(connect(pg.owner_dsn(pg_server, live))) as owner:
        await add_retention_class(owner, "one-day", DAY, "enqueued", basis="one day")
    async with pooled(pg.app_dsn(pg_server, live), queries, max_size=4) as db:
        await set_up(db, keyring)
        await attach_policy(db, "kyc", retention_class="one-day")
        await enqueue(db, keyring, "app-3", "cust-2", 3)

    # The backup: a copy of the database as it is now, every canary in it.
    backup = await pg.clone_database(pg_server, live)
    databases.append(backup)

    async with pooled(pg.app_dsn(pg_server, live), queries, max_size=4) as db:
        request = await request_erasure(db, CORA, "cust-1", "Art. 17")
        assert isinstance(request, ErasureRequest)
        assert isinstance(
            await approve_erasure(db, CARL, request.id, keyring, ledger), ErasureReceipt
        )
        worker = RetentionWorker(db, keyring, ledger, interval_seconds=3600)
        assert (await worker.run_once(now=datetime.now(UTC) + timedelta(days=2))).fields_erased == 3
    async with closing(connect(pg.owner_dsn(pg_server, live))) as owner:
        assert await columns_holding(owner, needles) == []
        assert await readable_values(owner, keyring) == []
    assert [(e.subject_ref, e.kind) for e in ledger.entries()] == [
        ("cust-1", "request"),
        ("cust-2", "retention"),
    ]
    assert not any(n in ledger.path.read_text() for n in needles)

    # The restore brings every canary back (sealed, and the key file still opens them) ...
    async with closing(connect(pg.owner_dsn(pg_server, backup))) as owner:
        assert await columns_holding(owner, needles) == []
        restored = " ".join(await readable_values(owner, keyring))
        assert all(needle in restored for needle in needles)
    # ... and the replay, as the operator runs it, erases them again.
    run = await casework(
        database(pg_server, backup), tmp_path / "home", f"privacy replay --ledger {ledger.path}"
    )
    assert run.code == 0, run.stderr
    assert "2 entries" in run.stderr
    assert "erased again 9 field(s)" in run.stderr
    async with closing(connect(pg.owner_dsn(pg_server, backup))) as owner:
        assert await columns_holding(owner, needles) == []
        assert await readable_values(owner, keyring) == []
        actions = await owner.fetch(
            "SELECT action, subject_ref, actor FROM privacy_log "
            "WHERE action = 'erasure_replayed' ORDER BY id"
        )
        assert [tuple(a) for a in actions] == [
            ("erasure_replayed", "cust-1", "casework:privacy-replay"),
            ("erasure_replayed", "cust-2", "casework:privacy-replay"),
        ]
        shredded = await owner.fetchval(
            "SELECT count(*) FROM privacy_subject_keys WHERE shredded_at IS NOT NULL"
        )
        assert shredded == 2

    # Again: idempotent, nothing more to erase.
    async with pooled(pg.app_dsn(pg_server, backup), queries, max_size=2) as db:
        again = await replay(db, ledger)
    assert (again.entries, again.fields_erased, again.keys_shredded) == (2, 0, 0)


async def test_a_ledger_line_cut_short_is_skipped_and_a_bad_one_refused(tmp_path: Path) -> None:
    ledger = ErasureLedger(tmp_path / "ledger.jsonl")
    entry = LedgerEntry("cust-1", "request", datetime.now(UTC), (1, 2), request_id=7)
    ledger.append([entry])
    with ledger.path.open("a") as handle:
        handle.write('{"v":1,"at":"2026')
    assert list(ledger.entries()) == [entry]
    ledger.path.write_text("not json\n" + entry.to_json() + "\n")
    with pytest.raises(LedgerError, match="line 1"):
        list(ledger.entries())
    assert oct(ledger.path.stat().st_mode & 0o777) == oct(0o600)


async def test_replay_without_a_ledger_says_so(test_database: TestDatabase, tmp_path: Path) -> None:
    run = await casework(
        test_database, tmp_path, f"privacy replay --ledger {tmp_path / 'missing.jsonl'}"
    )
    assert run.code == 2
    assert "there is no erasure ledger at" in run.stderr
