"""The `casework` command, run as an operator runs it: a separate process, a real database."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import asyncpg

from server.domain.identity.tokens import LAST_USED_RESOLUTION_SECONDS, authenticate, hash_token
from server.domain.model import Principal, Role
from server.store.database import Database
from tests.api.helpers import casework
from tests.conftest import TestDatabase, token_maker


async def test_migrate_on_a_migrated_database_is_up_to_date(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    run = await casework(test_database, tmp_path, "migrate")

    assert run.code == 0, run.stderr
    assert "up to date" in run.stdout


async def test_token_create_prints_a_token_that_authenticates_as_its_principal(
    test_database: TestDatabase, tmp_path: Path, db: Database, owner_conn: asyncpg.Connection
) -> None:
    run = await casework(
        test_database, tmp_path, "token create --user u --role reviewer --queue kyc"
    )

    assert run.code == 0, run.stderr
    token = run.stdout.rstrip("\n").splitlines()[-1]
    assert await authenticate(db, token) == Principal("u", Role.REVIEWER, frozenset({"kyc"}))
    stored = await owner_conn.fetch("SELECT * FROM api_tokens")
    assert [row["token_hash"] for row in stored] == [hash_token(token)]
    assert all(token not in str(value) for row in stored for value in row.values())


async def test_a_reviewer_token_without_a_queue_is_refused(
    test_database: TestDatabase, tmp_path: Path, owner_conn: asyncpg.Connection
) -> None:
    run = await casework(test_database, tmp_path, "token create --user u --role reviewer")

    assert run.code == 2
    assert "at least one queue" in run.stderr
    assert run.stdout == ""
    assert await owner_conn.fetchval("SELECT count(*) FROM api_tokens") == 0


async def test_an_unknown_role_is_refused(test_database: TestDatabase, tmp_path: Path) -> None:
    run = await casework(test_database, tmp_path, "token create --user u --role boss")

    assert run.code == 2
    assert "invalid choice: 'boss'" in run.stderr
    assert run.stdout == ""


async def test_an_unreachable_database_is_an_error_message_not_a_traceback(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    unreachable = TestDatabase(
        test_database.name, "postgresql://postgres@127.0.0.1:1/casework", test_database.app_dsn
    )

    run = await casework(unreachable, tmp_path, "migrate")

    assert run.code == 2
    assert run.stderr.startswith("casework: error: cannot reach PostgreSQL at 127.0.0.1:1/casework")
    assert "Traceback" not in run.stderr


async def test_token_revoke_stops_every_token_of_the_user(
    test_database: TestDatabase, tmp_path: Path, db: Database
) -> None:
    first = await casework(test_database, tmp_path, "token create --user rita --role manager")
    second = await casework(test_database, tmp_path, "token create --user rita --role manager")
    other = await casework(test_database, tmp_path, "token create --user rob --role manager")
    tokens = [run.stdout.splitlines()[-1] for run in (first, second, other)]

    run = await casework(test_database, tmp_path, "token revoke --user rita")

    assert run.code == 0, run.stderr
    assert "revoked 2 token(s)" in run.stdout
    assert [await authenticate(db, token) is not None for token in tokens] == [False, False, True]


async def test_token_list_shows_each_live_token_and_never_a_secret(
    test_database: TestDatabase, tmp_path: Path, owner_conn: asyncpg.Connection
) -> None:
    reviewer = await casework(
        test_database,
        tmp_path,
        "token create --user rita --role reviewer --queue kyc --queue kyc-senior "
        "--expires-in-days 30",
    )
    manager = await casework(test_database, tmp_path, "token create --user max --role manager")
    revoked = await casework(test_database, tmp_path, "token create --user olga --role admin")
    await casework(test_database, tmp_path, "token revoke --user olga")
    secrets = [run.stdout.splitlines()[-1] for run in (reviewer, manager, revoked)]
    rows = await owner_conn.fetch("SELECT id, token_hash, created_at FROM api_tokens ORDER BY id")

    live = await casework(test_database, tmp_path, "token list")
    everything = await casework(test_database, tmp_path, "token list --all")

    assert live.code == 0, live.stderr
    lines = [line.split("  ") for line in live.stdout.splitlines()]
    cells = [[cell.strip() for cell in line if cell.strip()] for line in lines]
    assert cells[0] == ["ID", "USER", "ROLE", "QUEUES", "CREATED", "EXPIRES", "LAST USED", "STATE"]
    created = f"{rows[0]['created_at'].astimezone(UTC):%Y-%m-%d %H:%M}"
    assert cells[1][:5] == [str(rows[0]["id"]), "rita", "reviewer", "kyc,kyc-senior", created]
    assert cells[1][6:] == ["never", "active"]
    assert cells[2][:4] == [str(rows[1]["id"]), "max", "manager", "(all)"]
    assert cells[2][5:] == ["never", "never", "active"]
    assert len(cells) == 3
    assert [line.split()[-1] for line in everything.stdout.splitlines()[1:]] == [
        "active",
        "active",
        "revoked",
    ]
    for secret in [*secrets, *(row["token_hash"] for row in rows)]:
        assert secret not in live.stdout + everything.stdout


async def test_token_revoke_by_id_stops_that_token_only(
    test_database: TestDatabase, tmp_path: Path, db: Database, owner_conn: asyncpg.Connection
) -> None:
    runs = [
        await casework(test_database, tmp_path, "token create --user rita --role manager")
        for _ in range(2)
    ]
    tokens = [run.stdout.splitlines()[-1] for run in runs]
    first_id = await owner_conn.fetchval("SELECT min(id) FROM api_tokens")

    revoked = await casework(test_database, tmp_path, f"token revoke --token-id {first_id}")
    again = await casework(test_database, tmp_path, f"token revoke --token-id {first_id}")
    missing = await casework(test_database, tmp_path, "token revoke --token-id 999999")

    assert revoked.code == 0, revoked.stderr
    assert revoked.stdout.startswith(f"revoked token {first_id} of user 'rita'")
    assert [await authenticate(db, token) is not None for token in tokens] == [False, True]
    assert (again.code, again.stdout.strip()) == (
        0,
        f"token {first_id} of user 'rita' was revoked already",
    )
    assert missing.code == 2
    assert missing.stderr.strip() == (
        "casework: error: there is no token 999999; `casework token list` shows them"
    )


async def test_a_token_records_its_last_use_at_most_once_a_minute(
    owner_db: Database, db: Database, owner_conn: asyncpg.Connection
) -> None:
    token = await token_maker(owner_db)("max", Role.MANAGER)
    last_used = "SELECT last_used_at FROM api_tokens"
    assert await owner_conn.fetchval(last_used) is None

    await authenticate(db, token)
    first = await owner_conn.fetchval(last_used)
    await authenticate(db, token)
    within_the_minute = await owner_conn.fetchval(last_used)
    await owner_conn.execute(
        "UPDATE api_tokens SET last_used_at = last_used_at - make_interval(secs => $1)",
        LAST_USED_RESOLUTION_SECONDS + 1,
    )
    await authenticate(db, token)
    later = await owner_conn.fetchval(last_used)

    assert first is not None
    assert within_the_minute == first
    assert later > first
