"""Sending a notice to a channel. A notice (server/effects/notice.py, re-exported here) is
what waits, for whom, since when, and a link to the console; it is built from an outbox
event's data and the rule, never from an item's payload, so no field a privacy policy marks
personal can reach it.

Channels: EMAIL over SMTP (aiosmtplib; the server from CASEWORK_SMTP_URL, the From address
from CASEWORK_NOTIFY_FROM, both in `ChannelTarget.mail`), SLACK and TEAMS incoming webhooks
(one JSON POST each, in the shape each renders), and APPRISE (any Apprise URL).

Sending raises TransientEffectError (try again later, after `retry_after` seconds when the
receiver said so) or PermanentEffectError (the channel refuses for good); anything else
counts as transient."""

from __future__ import annotations

import email.utils
import json
import logging
import re
import ssl
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from functools import cache
from types import ModuleType
from typing import Any

import aiosmtplib

from server.config_mail import MailSettings, SmtpSecurity
from server.domain.integrations.notification_kinds import ChannelKind
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.effects.http import TRANSPORT_ERRORS, Session, failure, post
from server.effects.notice import Notice, NoticeEntry, console_link, render_notice
from server.effects.notify_bodies import slack_body, teams_body
from server.effects.webhook import retry_after_seconds

__all__ = [
    "ChannelTarget",
    "Notice",
    "NoticeEntry",
    "console_link",
    "render_notice",
    "send_notice",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChannelTarget:
    kind: ChannelKind
    target: str
    timeout_seconds: float = 10.0
    # EMAIL only: the SMTP server and the From address (Settings.mail); None cannot send.
    mail: MailSettings | None = None


# --- sending ---


async def send_notice(client: Session, channel: ChannelTarget, notice: Notice) -> None:
    try:
        # The kind as stored (a string) is accepted as well as the enum.
        kind = ChannelKind(channel.kind)
    except ValueError:
        raise PermanentEffectError(f"no channel kind {channel.kind!r}") from None
    if kind is ChannelKind.EMAIL:
        await send_email(channel, notice)
    elif kind is ChannelKind.SLACK:
        await _post_incoming_webhook(client, channel, slack_body(notice))
    elif kind is ChannelKind.TEAMS:
        await _post_incoming_webhook(client, channel, teams_body(notice))
    else:
        await send_apprise(channel, notice)


# HTTP answers worth trying again besides 5xx: Request Timeout, Too Early, Too Many Requests.
TRANSIENT_HTTP = frozenset({408, 425, 429})


def http_failure(status: int, detail: str, retry_after: float | None = None) -> Exception:
    """The error for an HTTP answer that is not a success."""
    if status in TRANSIENT_HTTP or status >= 500:
        return TransientEffectError(f"HTTP {status}{detail}", retry_after=retry_after)
    return PermanentEffectError(f"HTTP {status}{detail}")


async def _post_incoming_webhook(
    client: Session, channel: ChannelTarget, body: dict[str, Any]
) -> None:
    # Compact JSON, non-ASCII as is: the bytes httpx's `json=` sent.
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        answer = await post(
            client,
            channel.target,
            body=content.encode(),
            headers={"Content-Type": "application/json"},
            timeout_seconds=channel.timeout_seconds,
        )
    except TRANSPORT_ERRORS as error:
        raise TransientEffectError(failure(error)) from error
    if answer.success:
        return
    raise http_failure(
        answer.status,
        f": {answer.text[:200]}",
        retry_after_seconds(answer.headers.get("retry-after")),
    )


# --- e-mail ---


def mailboxes(target: str) -> list[tuple[str, str]]:
    """An EMAIL channel's target: addresses separated by commas, display names allowed, as
    (name, address) pairs."""
    pairs = [(name, address) for name, address in email.utils.getaddresses([target]) if address]
    bad = [address for _name, address in pairs if "@" not in address]
    if not pairs or bad:
        raise PermanentEffectError(
            f"the channel's target is not a list of e-mail addresses: {', '.join(bad) or target!r}"
        )
    return pairs


def email_message(mail: MailSettings, to: list[tuple[str, str]], notice: Notice) -> EmailMessage:
    message = EmailMessage()
    message["From"] = mail.sender
    message["To"] = ", ".join(email.utils.formataddr(pair) for pair in to)
    message["Subject"] = notice.subject
    message["Date"] = email.utils.format_datetime(notice.rendered_at or datetime.now(UTC))
    domain = email.utils.parseaddr(mail.sender)[1].rpartition("@")[2] or None
    message["Message-ID"] = email.utils.make_msgid("casework", domain=domain)
    # RFC 3834: an automatic message; out-of-office replies should not answer it.
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(notice.text + "\n")
    message.add_alternative(
        f"<!DOCTYPE html><html><body>{notice.html}</body></html>\n", subtype="html"
    )
    return message


async def send_email(channel: ChannelTarget, notice: Notice) -> None:
    mail = channel.mail
    if mail is None:
        raise PermanentEffectError(
            "e-mail cannot be sent: CASEWORK_SMTP_URL and CASEWORK_NOTIFY_FROM are not set"
        )
    to = mailboxes(channel.target)
    recipients = [address for _name, address in to]
    message = email_message(mail, to, notice)
    try:
        refused, _reply = await aiosmtplib.send(
            message,
            sender=email.utils.parseaddr(mail.sender)[1],
            recipients=recipients,
            hostname=mail.host,
            port=mail.port,
            username=mail.username,
            password=mail.password,
            use_tls=mail.security is SmtpSecurity.TLS,
            start_tls=mail.security is SmtpSecurity.STARTTLS,
            cert_bundle=str(mail.ca_file) if mail.ca_file else None,
            timeout=channel.timeout_seconds,
        )
    except aiosmtplib.SMTPRecipientsRefused as error:
        raise smtp_failure(error) from error
    except aiosmtplib.SMTPResponseException as error:
        raise smtp_failure(error) from error
    except aiosmtplib.SMTPNotSupported as error:
        raise PermanentEffectError(f"the SMTP server does not support it: {error}") from error
    except (aiosmtplib.SMTPException, OSError, ssl.SSLError) as error:
        if type(error) is aiosmtplib.SMTPException:
            # aiosmtplib raises the bare class only when the server lacks what the settings
            # ask for (STARTTLS, AUTH, a login mechanism): no retry changes that.
            raise PermanentEffectError(f"SMTP: {error}") from error
        raise TransientEffectError(f"SMTP: {type(error).__name__}: {error}") from error
    if refused:
        # Some recipients took it: sent. The others are named in the log, not retried
        # (a retry would send the message again to those who have it).
        log.warning(
            "notification e-mail refused for %s",
            ", ".join(f"{address} ({answer.code})" for address, answer in refused.items()),
        )


def smtp_failure(
    error: aiosmtplib.SMTPResponseException | aiosmtplib.SMTPRecipientsRefused,
) -> Exception:
    """SMTP's reply codes say it: 4xx is a temporary refusal, 5xx a permanent one."""
    if isinstance(error, aiosmtplib.SMTPRecipientsRefused):
        codes = [refusal.code for refusal in error.recipients]
        detail = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in error.recipients)
    else:
        codes = [error.code]
        detail = f"{error.code} {error.message}"
    if all(500 <= code < 600 for code in codes):
        return PermanentEffectError(f"SMTP refused: {detail}")
    return TransientEffectError(f"SMTP refused for now: {detail}")


# --- Apprise ---

# An HTTP status in the log line an Apprise plugin writes on failure ("..., error=404.").
_APPRISE_HTTP_STATUS = re.compile(r"\berror=(\d{3})\b")


@cache
def _apprise() -> ModuleType:
    """Apprise, its plugins loaded once. Its e-mail plugin imports `imghdr`, deprecated in
    Python 3.11 and absent from 3.13 (where Apprise puts a stand-in): that one warning says
    nothing to act on here, so it is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
        import apprise
        from apprise.manager_plugins import NotificationManager

        NotificationManager().load_modules()  # type: ignore[no-untyped-call]
    return apprise


async def send_apprise(channel: ChannelTarget, notice: Notice) -> None:
    """Apprise answers only success, failure or timeout per service. A failure is
    classified by the HTTP status its plugin logs (`error=NNN`): 4xx other than 408, 425
    and 429 is permanent; a 5xx, a connection error or anything unnamed is transient.
    Apprise does not pass Retry-After on, so the retry follows the backoff."""
    apprise = _apprise()
    asset = apprise.AppriseAsset(storage_mode=apprise.PersistentStoreMode.MEMORY)
    sender = apprise.Apprise(asset=asset)
    if not sender.add(channel.target):
        raise PermanentEffectError("the channel's target is not an Apprise URL Apprise can use")
    result = await sender.async_notify(
        body=notice.text,
        title=notice.subject,
        body_format=apprise.NotifyFormat.TEXT,
        timeout=channel.timeout_seconds,
    )
    with result:
        status = result.status
        lines = [entry.message for entry in result.logs() if entry.level in ("WARNING", "ERROR")]
    if status == apprise.AppriseResultStatus.SUCCESS:
        return
    detail = "; ".join(lines)[:300] or status.name
    if status == apprise.AppriseResultStatus.TIMEOUT:
        raise TransientEffectError(f"Apprise: timed out after {channel.timeout_seconds} s")
    codes = [int(match) for line in lines for match in _APPRISE_HTTP_STATUS.findall(line)]
    if codes:
        raise http_failure(codes[-1], f" (Apprise: {detail})")
    if status == apprise.AppriseResultStatus.NOMATCH:
        raise PermanentEffectError(f"Apprise sent to no service: {detail}")
    raise TransientEffectError(f"Apprise: {detail}")
