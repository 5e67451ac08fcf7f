"""CASEWORK_DATABASE_POOLER: what it accepts, where LISTEN connects, and what `serve` and
`worker` refuse before they start (server/pooler.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from server.config import ConfigError, Settings
from server.pooler import check_pooler_settings, listen_dsn

POOLER = "postgresql://casework_app@pgbouncer:6432/casework"
DIRECT = "postgresql://casework_app@db:5432/casework"

BASE = Settings(
    database_url="postgresql://postgres@db:5432/casework",
    app_database_url=POOLER,
    home=Path("/tmp/casework"),
    db_dir=Path("/tmp/casework/db"),
    pool_min_size=2,
    pool_max_size=20,
    events_transport="postgres",
)
POOLED = replace(BASE, database_pooler="transaction")


def test_the_setting_reads_none_or_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CASEWORK_DATABASE_POOLER", raising=False)
    assert not Settings.from_env().transaction_pooler
    monkeypatch.setenv("CASEWORK_DATABASE_POOLER", "Transaction")
    assert Settings.from_env().transaction_pooler
    monkeypatch.setenv("CASEWORK_DATABASE_POOLER", "session")
    with pytest.raises(ConfigError, match="CASEWORK_DATABASE_POOLER='session': expected one of"):
        Settings.from_env()


def test_without_a_pooler_listen_uses_the_service_connection_unless_told() -> None:
    assert listen_dsn(BASE, DIRECT) == DIRECT
    assert listen_dsn(replace(BASE, listen_database_url=POOLER), DIRECT) == POOLER
    check_pooler_settings(BASE)


def test_behind_a_pooler_listen_goes_to_the_direct_url() -> None:
    settings = replace(POOLED, listen_database_url=DIRECT)
    assert listen_dsn(settings, POOLER) == DIRECT
    check_pooler_settings(settings)
    check_pooler_settings(settings, worker=True)


@pytest.mark.parametrize("worker", [False, True])
def test_behind_a_pooler_listen_without_a_direct_url_is_refused(worker: bool) -> None:
    with pytest.raises(ConfigError, match="set CASEWORK_LISTEN_DATABASE_URL to a direct"):
        check_pooler_settings(POOLED, worker=worker)
    with pytest.raises(ConfigError, match="CASEWORK_LISTEN_DATABASE_URL"):
        listen_dsn(POOLED, POOLER)


def test_the_pooler_address_as_listen_url_is_refused() -> None:
    with pytest.raises(ConfigError, match="CASEWORK_LISTEN_DATABASE_URL is CASEWORK_APP_"):
        check_pooler_settings(replace(POOLED, listen_database_url=POOLER))


def test_with_redis_a_serving_process_listens_to_nothing() -> None:
    check_pooler_settings(replace(POOLED, events_transport="redis"))
    check_pooler_settings(replace(POOLED, events_transport="redis"), worker=True)
    # The memory transport serves no LISTEN, but a standalone worker still listens.
    check_pooler_settings(replace(POOLED, events_transport="memory"))
    with pytest.raises(ConfigError, match="CASEWORK_LISTEN_DATABASE_URL"):
        check_pooler_settings(replace(POOLED, events_transport="memory"), worker=True)


def test_the_pooler_setting_needs_the_app_url_apart_from_the_owners() -> None:
    with pytest.raises(ConfigError, match="CASEWORK_APP_DATABASE_URL, which is not set"):
        check_pooler_settings(replace(POOLED, app_database_url=None, listen_database_url=DIRECT))


def test_the_banner_counts_postgresql_connections_besides_the_poolers() -> None:
    from server.cli.serve import _connection_budget

    settings = replace(POOLED, listen_database_url=DIRECT)
    assert _connection_budget(4, settings) == (
        "4 on this port, each with up to 20 connections to the pooler (CASEWORK_POOL_MAX) "
        "and a direct listener: 4 PostgreSQL connections besides the pooler's"
    )
    assert "up to 84 PostgreSQL connections in all" in _connection_budget(4, BASE)


def test_every_statement_that_returns_a_hint_is_known_to_send_one() -> None:
    """Behind a transaction pooler with published hints, the statements the database layer
    recognises as sending a hint get `casework.events` set for their transaction; one it
    missed would NOTIFY. The hint comes back as the `notification` column."""
    import re

    from server.store.database import _SENDS_HINT
    from server.store.queries import Queries
    from tests.pg import QUERIES_DIR

    queries = Queries(QUERIES_DIR)
    returns_hint = {
        name
        for name in queries.names()
        if re.search(r"\bnotification\b", queries.statement(name).sql)
    }
    sends_hint = {
        name for name in queries.names() if _SENDS_HINT.search(queries.statement(name).sql)
    }
    assert returns_hint
    assert returns_hint == sends_hint
