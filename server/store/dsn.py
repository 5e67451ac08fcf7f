"""Connection strings: the application role's DSN is derived from the owner's."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

APP_ROLE = "casework_app"


def with_user(dsn: str, user: str, password: str | None = None) -> str:
    parts = urlsplit(dsn)
    host = parts.netloc.rpartition("@")[2]
    credentials = user if password is None else f"{user}:{password}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}"))


def with_database(dsn: str, database: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{database}"))


def database_name(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/") or "postgres"
