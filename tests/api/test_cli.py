"""The `casework` command, run as an operator runs it: a separate process, a real database."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import asyncpg

from server.domain.model import Principal, Role
from server.domain.tokens import authenticate, hash_token
from server.store.database import Database
from tests.api.live_server import Run, run_casework
from tests.conftest import TestDatabase


async def casework(test_database: TestDatabase, home: Path, command_line: str) -> Run:
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        # Empty: were DATABASE_URL ignored, the command would work on a fresh embedded
        # database and the checks against the test database would fail.
        "CASEWORK_HOME": str(home),
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    return await run_casework(env, *shlex.split(command_line))


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
