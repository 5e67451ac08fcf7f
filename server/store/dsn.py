"""Connection strings: the application role's DSN is derived from the owner's.

A DSN may name several hosts (`postgresql://user@h1:5432,h2:5432/db`), as libpq and asyncpg
allow: a client tries them in order and keeps the first that matches `target_session_attrs`.
With several hosts and no `target_session_attrs`, Casework asks for `read-write`, so that
it never writes to, or listens on, a standby (see `writable`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

APP_ROLE = "casework_app"
TARGET_SESSION_ATTRS = "target_session_attrs"


def with_user(dsn: str, user: str, password: str | None = None) -> str:
    parts = urlsplit(dsn)
    hosts = parts.netloc.rpartition("@")[2]
    credentials = user if password is None else f"{user}:{password}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{hosts}"))


def with_database(dsn: str, database: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{database}"))


def database_name(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/") or "postgres"


def hosts(dsn: str) -> list[tuple[str, int | None]]:
    """Each (host, port) the DSN names, in order: one, or several for a multi-host DSN.

    From the authority (`h1:p1,h2:p2`, IPv6 in brackets), else from the `host` and `port`
    query parameters (`?host=/run/postgresql` for a socket directory); empty when it names
    none (the driver's default then applies). Unlike `urlsplit(dsn).port`, which raises on
    a multi-host DSN.
    """
    parts = urlsplit(dsn)
    authority = parts.netloc.rpartition("@")[2]
    query = parse_qs(parts.query)
    if authority:
        entries = [_host_and_port(entry) for entry in authority.split(",")]
    else:
        names = ",".join(query.get("host", [])).split(",")
        ports = ",".join(query.get("port", [])).split(",")
        entries = [
            (name, ports[n] if n < len(ports) else (ports[0] if len(ports) == 1 else ""))
            for n, name in enumerate(names)
        ]
    return [(host, int(port) if port.isdigit() else None) for host, port in entries if host]


def _host_and_port(entry: str) -> tuple[str, str]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = entry.partition(":")
    return host, port


def target_session_attrs(dsn: str) -> str | None:
    values = parse_qs(urlsplit(dsn).query).get(TARGET_SESSION_ATTRS)
    return values[-1] if values else None


def writable(dsn: str) -> str:
    """The DSN, asking for a writable server (`target_session_attrs=read-write`) when it names
    several hosts and says nothing of which to pick: asyncpg's default is `any`, the first
    that answers, which may be a standby."""
    if len(hosts(dsn)) < 2 or target_session_attrs(dsn) is not None:
        return dsn
    parts = urlsplit(dsn)
    extra = urlencode({TARGET_SESSION_ATTRS: "read-write"})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit(parts._replace(query=query))
