"""The e-mail settings (CASEWORK_SMTP_URL, CASEWORK_NOTIFY_FROM, CASEWORK_SMTP_CA_FILE),
read by server/config.py; docs/operations.md, "Notifications"."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


class MailSettingError(ValueError):
    """A mail setting that cannot work (Settings.from_env turns it into a ConfigError)."""


class SmtpSecurity(enum.StrEnum):
    """How the connection to the SMTP server is protected (CASEWORK_SMTP_URL)."""

    # smtp://: plain SMTP; only for a relay on the same host or a private network.
    NONE = "none"
    # smtp://...?starttls=true: plain SMTP upgraded with STARTTLS, required (submission, 587).
    STARTTLS = "starttls"
    # smtps://: TLS from the first byte (implicit TLS, 465).
    TLS = "tls"


_SMTP_DEFAULT_PORTS = {SmtpSecurity.NONE: 25, SmtpSecurity.STARTTLS: 587, SmtpSecurity.TLS: 465}
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class MailSettings:
    """Where e-mail notifications go out (docs/operations.md, "Notifications"): the SMTP
    server from CASEWORK_SMTP_URL and the From address from CASEWORK_NOTIFY_FROM."""

    host: str
    port: int
    security: SmtpSecurity
    sender: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # CASEWORK_SMTP_CA_FILE: certificates (PEM) to trust for the server's, besides the
    # system's (a relay with a certificate from the organisation's own authority).
    ca_file: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MailSettings | None:
        """None when CASEWORK_SMTP_URL is unset: e-mail channels cannot send."""
        raw = (env.get("CASEWORK_SMTP_URL") or "").strip()
        if not raw:
            return None
        settings = parse_smtp_url(raw, sender=(env.get("CASEWORK_NOTIFY_FROM") or "").strip())
        ca_file = env.get("CASEWORK_SMTP_CA_FILE") or None
        if ca_file is None:
            return settings
        path = Path(ca_file).resolve()
        if not path.is_file():
            raise MailSettingError(f"CASEWORK_SMTP_CA_FILE={ca_file!r}: no such file")
        return replace(settings, ca_file=path)


def parse_smtp_url(raw: str, *, sender: str) -> MailSettings:
    """`smtp://[user:password@]host[:port][?starttls=true]` or `smtps://...`; the user and
    password percent-encoded. A password is refused over a plain connection to another host."""

    def refuse(why: str) -> MailSettingError:
        return MailSettingError(f"CASEWORK_SMTP_URL: {why}")

    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        raise refuse("not a URL (smtp://user:password@host:port or smtps://...)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("smtp", "smtps") or not parts.hostname:
        raise refuse("expected smtp://[user:password@]host[:port] or smtps://...")
    if parts.path not in ("", "/") or parts.fragment:
        raise refuse("a path or fragment means nothing to an SMTP server")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"starttls"})
    if unknown:
        raise refuse(f"unknown parameter {unknown[0]!r} (only starttls=true|false)")
    starttls_value = query.get("starttls", ["false"])[-1].lower()
    if starttls_value not in ("true", "false", "1", "0"):
        raise refuse(f"starttls={starttls_value!r}: expected true or false")
    starttls = starttls_value in ("true", "1")
    if scheme == "smtps":
        if starttls:
            raise refuse("smtps:// is TLS already: starttls=true is for smtp://")
        security = SmtpSecurity.TLS
    else:
        security = SmtpSecurity.STARTTLS if starttls else SmtpSecurity.NONE
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if (
        password is not None
        and security is SmtpSecurity.NONE
        and parts.hostname.lower() not in _LOOPBACK_HOSTS
    ):
        raise refuse(
            "a password would cross the network unencrypted: use smtps:// or ?starttls=true"
        )
    if not sender:
        raise MailSettingError(
            "CASEWORK_SMTP_URL is set but CASEWORK_NOTIFY_FROM (the From address) is not"
        )
    if "@" not in sender:
        raise MailSettingError(
            f"CASEWORK_NOTIFY_FROM={sender!r}: expected an address such as casework@example.com"
        )
    return MailSettings(
        host=parts.hostname,
        port=port or _SMTP_DEFAULT_PORTS[security],
        security=security,
        sender=sender,
        username=username,
        password=password,
    )
