"""Behind a connection pooler in transaction mode (CASEWORK_DATABASE_POOLER=transaction).

PgBouncer in `pool_mode = transaction` gives each transaction of a client whichever server
session is free, so nothing the service leaves on a session survives it. The pool keeps no
prepared statements and sets its hint routing per transaction (server/store/database.py);
the migrations' session lock needs the owner's direct DATABASE_URL; and LISTEN, which must
stay on one session to hear anything, connects to CASEWORK_LISTEN_DATABASE_URL. Here:
where LISTEN goes, and the start-up check that refuses a LISTEN through the pooler rather
than serve live updates that never arrive (docs/operations.md, "Connection poolers").
"""

from __future__ import annotations

from server.config import ConfigError, Settings
from server.store.dsn import writable

_POOLER = "CASEWORK_DATABASE_POOLER=transaction"


def listens(settings: Settings, *, worker: bool) -> bool:
    """Whether the process holds a LISTEN connection: a serving process with the postgres
    transport; a standalone worker unless it takes its hints from Redis."""
    if worker:
        return settings.events_transport != "redis"
    return settings.events_transport == "postgres"


def check_pooler_settings(settings: Settings, *, worker: bool = False) -> None:
    """What `serve` and `worker` check before they start: a ConfigError (one line, naming
    the setting to change) for a set-up that could not work behind the pooler."""
    if not settings.transaction_pooler:
        return
    if settings.app_database_url is None:
        raise ConfigError(
            f"{_POOLER} describes CASEWORK_APP_DATABASE_URL, which is not set: point "
            "CASEWORK_APP_DATABASE_URL at the pooler and keep DATABASE_URL (migrations, "
            "which hold a session lock) direct to PostgreSQL"
        )
    if listens(settings, worker=worker):
        listen_dsn(settings, settings.app_database_url)


def listen_dsn(settings: Settings, app_dsn: str) -> str:
    """Where this process's LISTEN connects: CASEWORK_LISTEN_DATABASE_URL when set, else the
    service's own DSN, unless that goes through a transaction pooler (a ConfigError)."""
    if settings.listen_database_url:
        if settings.transaction_pooler and settings.listen_database_url == app_dsn:
            raise ConfigError(
                f"CASEWORK_LISTEN_DATABASE_URL is CASEWORK_APP_DATABASE_URL, the pooler's "
                f"address ({_POOLER}): LISTEN needs a session of its own, so point "
                "CASEWORK_LISTEN_DATABASE_URL at PostgreSQL directly"
            )
        # LISTEN is refused on a standby: several hosts are asked for the writable one.
        return writable(settings.listen_database_url)
    if settings.transaction_pooler:
        raise ConfigError(
            f"{_POOLER}: live updates need LISTEN, which cannot work through a pooler in "
            "transaction mode (notifications reach a server session the pooler has already "
            "given to someone else); set CASEWORK_LISTEN_DATABASE_URL to a direct connection "
            "to PostgreSQL, or use CASEWORK_EVENTS_TRANSPORT=redis"
        )
    return app_dsn
