"""Each channel kind sends to a real receiver: e-mail to aiosmtpd (plain, STARTTLS with a
login, implicit TLS), Apprise's json:// and Slack and Teams bodies to a local HTTP server.
Failures are classified: a refused connection, 4xx SMTP replies, 5xx HTTP and 429 are
transient (429 with its Retry-After); 5xx SMTP replies and other 4xx HTTP are permanent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from server.config import ConfigError, Settings
from server.config_mail import MailSettings, SmtpSecurity
from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.effects.http import Session, open_session
from server.effects.notify import ChannelTarget, Notice, NoticeEntry, render_notice, send_notice
from tests.api.live_server import free_port
from tests.apply.receiver import OK, Reply, always, webhook_receiver
from tests.notifications.smtp_support import smtp_server

LINK = "https://casework.example.test/console/#/item/42"
SENDER = "Casework <casework@example.test>"


def entry(**overrides: object) -> NoticeEntry:
    values: dict[str, object] = {
        "event": NotificationEvent.OVERDUE,
        "rule": "overdue-payments",
        "item_id": 42,
        "queue": "payments",
        "workflow": None,
        "waiting_for": "payments reviewers",
        "since": datetime.now(UTC) - timedelta(hours=3),
        "link": LINK,
        "external_key": "ORD-7",
    }
    values.update(overrides)
    return NoticeEntry(**values)  # type: ignore[arg-type]


@pytest.fixture
def notice() -> Notice:
    return render_notice((entry(),))


@pytest.fixture
async def client() -> AsyncIterator[Session]:
    async with open_session(4) as http:
        yield http


def email_channel(mail: MailSettings | None, target: str) -> ChannelTarget:
    return ChannelTarget(ChannelKind.EMAIL, target, timeout_seconds=5.0, mail=mail)


# --- e-mail ---


async def test_an_email_reaches_every_recipient_with_subject_text_html_and_link(
    client: Session, notice: Notice
) -> None:
    with smtp_server() as server:
        channel = email_channel(
            server.mail_settings(SENDER), "Payments team <payments@example.test>, lead@example.test"
        )
        await send_notice(client, channel, notice)

        [received] = await server.wait_for(1)
    message = received.message
    assert received.mail_from == "casework@example.test"
    assert received.rcpt_tos == ("payments@example.test", "lead@example.test")
    assert message["Subject"] == notice.subject
    assert "item 42" in message["Subject"]
    assert "overdue" in message["Subject"]
    assert message["From"] == SENDER
    assert message["To"] == "Payments team <payments@example.test>, lead@example.test"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Message-ID"].endswith("@example.test>")
    plain = message.get_body(("plain",))
    rich = message.get_body(("html",))
    assert plain is not None
    assert rich is not None
    assert LINK in plain.get_content()
    assert "Waits for: payments reviewers" in plain.get_content()
    assert f"href='{LINK}'" in rich.get_content()
    assert not received.tls
    assert not received.authenticated


async def test_starttls_with_a_login_as_casework_smtp_url_configures_it(
    client: Session, notice: Notice
) -> None:
    with smtp_server(tls="starttls", login=("casework", "pa ss@word")) as server:
        mail = MailSettings.from_env(
            {
                "CASEWORK_SMTP_URL": (
                    f"smtp://casework:pa%20ss%40word@{server.host}:{server.port}?starttls=true"
                ),
                "CASEWORK_NOTIFY_FROM": SENDER,
                "CASEWORK_SMTP_CA_FILE": str(server.ca_file),
            }
        )
        assert mail is not None
        assert mail.security is SmtpSecurity.STARTTLS
        await send_notice(client, email_channel(mail, "ops@example.test"), notice)

        [received] = await server.wait_for(1)
    assert received.tls
    assert received.authenticated
    assert received.rcpt_tos == ("ops@example.test",)


async def test_implicit_tls_smtps(client: Session, notice: Notice) -> None:
    with smtp_server(tls="implicit") as server:
        mail = MailSettings.from_env(
            {
                "CASEWORK_SMTP_URL": server.url,
                "CASEWORK_NOTIFY_FROM": SENDER,
                "CASEWORK_SMTP_CA_FILE": str(server.ca_file),
            }
        )
        assert mail is not None
        assert mail.security is SmtpSecurity.TLS
        await send_notice(client, email_channel(mail, "ops@example.test"), notice)

        [received] = await server.wait_for(1)
    assert received.tls


async def test_a_server_certificate_nobody_trusts_is_not_sent_to(
    client: Session, notice: Notice
) -> None:
    with smtp_server(tls="starttls") as server:
        with pytest.raises(TransientEffectError, match="CERTIFICATE_VERIFY_FAILED"):
            await send_notice(
                client,
                email_channel(server.mail_settings(SENDER, ca_file=None), "ops@example.test"),
                notice,
            )
        assert server.received == []


async def test_a_wrong_password_is_permanent(client: Session, notice: Notice) -> None:
    with smtp_server(tls="starttls", login=("casework", "right")) as server:
        mail = server.mail_settings(SENDER, password="wrong")
        with pytest.raises(PermanentEffectError, match="535"):
            await send_notice(client, email_channel(mail, "ops@example.test"), notice)
        assert server.received == []


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("550 5.1.1 No such user", PermanentEffectError),
        ("450 4.2.1 Mailbox busy", TransientEffectError),
    ],
)
async def test_every_recipient_refused_is_classified_by_its_reply_code(
    client: Session, notice: Notice, reply: str, error: type[Exception]
) -> None:
    with smtp_server(refuse={"gone@example.test": reply}) as server:
        with pytest.raises(error, match=reply[:3]):
            await send_notice(
                client, email_channel(server.mail_settings(SENDER), "gone@example.test"), notice
            )
        assert server.received == []


async def test_one_refused_recipient_does_not_stop_the_others(
    client: Session, notice: Notice
) -> None:
    with smtp_server(refuse={"gone@example.test": "550 5.1.1 No such user"}) as server:
        await send_notice(
            client,
            email_channel(server.mail_settings(SENDER), "gone@example.test, ops@example.test"),
            notice,
        )
        [received] = await server.wait_for(1)
    assert received.rcpt_tos == ("ops@example.test",)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("451 4.3.0 Try again later", TransientEffectError),
        ("554 5.6.0 Message refused", PermanentEffectError),
    ],
)
async def test_a_refused_message_is_classified_by_its_reply_code(
    client: Session, notice: Notice, reply: str, error: type[Exception]
) -> None:
    with smtp_server(data_reply=reply) as server, pytest.raises(error, match=reply[:3]):
        await send_notice(
            client, email_channel(server.mail_settings(SENDER), "ops@example.test"), notice
        )


@pytest.mark.parametrize(
    ("overrides", "missing"),
    [
        ({"security": SmtpSecurity.STARTTLS}, "STARTTLS"),
        ({"username": "casework", "password": "secret"}, "AUTH"),
    ],
)
async def test_a_server_without_what_the_url_asks_for_is_permanent(
    client: Session, notice: Notice, overrides: dict[str, object], missing: str
) -> None:
    with smtp_server() as server:
        mail = server.mail_settings(SENDER, **overrides)
        with pytest.raises(PermanentEffectError, match=missing):
            await send_notice(client, email_channel(mail, "ops@example.test"), notice)
        assert server.received == []


async def test_no_smtp_server_listening_is_transient(client: Session, notice: Notice) -> None:
    mail = MailSettings(
        host="127.0.0.1", port=free_port(), security=SmtpSecurity.NONE, sender=SENDER
    )
    with pytest.raises(TransientEffectError):
        await send_notice(client, email_channel(mail, "ops@example.test"), notice)


@pytest.mark.parametrize("target", ["", "not an address", "ops@example.test, nobody"])
async def test_a_target_that_is_not_addresses_is_permanent(
    client: Session, notice: Notice, target: str
) -> None:
    with smtp_server() as server:
        with pytest.raises(PermanentEffectError, match="e-mail addresses"):
            await send_notice(client, email_channel(server.mail_settings(SENDER), target), notice)
        assert server.received == []


async def test_without_smtp_settings_email_is_permanent_and_names_them(
    client: Session, notice: Notice
) -> None:
    with pytest.raises(PermanentEffectError, match="CASEWORK_SMTP_URL"):
        await send_notice(client, email_channel(None, "ops@example.test"), notice)


# --- the settings ---


def test_smtp_url_forms() -> None:
    def parse(url: str, **env: str) -> MailSettings | None:
        return MailSettings.from_env(
            {"CASEWORK_SMTP_URL": url, "CASEWORK_NOTIFY_FROM": SENDER, **env}
        )

    plain = parse("smtp://relay.internal")
    assert plain == MailSettings("relay.internal", 25, SmtpSecurity.NONE, SENDER)
    submission = parse("smtp://u%40x:p%3Aw@mail.example.com?starttls=true")
    assert submission is not None
    assert (submission.port, submission.security) == (587, SmtpSecurity.STARTTLS)
    assert (submission.username, submission.password) == ("u@x", "p:w")
    assert "p:w" not in repr(submission)
    tls = parse("smtps://u:p@mail.example.com:2465")
    assert tls is not None
    assert (tls.port, tls.security) == (2465, SmtpSecurity.TLS)
    local = parse("smtp://u:p@localhost:1025")
    assert local is not None
    assert local.password == "p"
    assert MailSettings.from_env({}) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CASEWORK_SMTP_URL": "smtp://relay.internal"}, "CASEWORK_NOTIFY_FROM"),
        (
            {"CASEWORK_SMTP_URL": "smtp://u:p@mail.example.com", "CASEWORK_NOTIFY_FROM": SENDER},
            "unencrypted",
        ),
        (
            {"CASEWORK_SMTP_URL": "http://mail.example.com", "CASEWORK_NOTIFY_FROM": SENDER},
            "smtp://",
        ),
        (
            {"CASEWORK_SMTP_URL": "smtp://mail.example.com?tls=1", "CASEWORK_NOTIFY_FROM": SENDER},
            "unknown parameter 'tls'",
        ),
        (
            {
                "CASEWORK_SMTP_URL": "smtps://m.example.com?starttls=true",
                "CASEWORK_NOTIFY_FROM": SENDER,
            },
            "TLS already",
        ),
        (
            {
                "CASEWORK_SMTP_URL": "smtp://m.example.com?starttls=maybe",
                "CASEWORK_NOTIFY_FROM": SENDER,
            },
            "expected true or false",
        ),
        (
            {"CASEWORK_SMTP_URL": "smtp://m.example.com", "CASEWORK_NOTIFY_FROM": "casework"},
            "an address",
        ),
        (
            {
                "CASEWORK_SMTP_URL": "smtp://m.example.com",
                "CASEWORK_NOTIFY_FROM": SENDER,
                "CASEWORK_SMTP_CA_FILE": "/nonexistent/ca.pem",
            },
            "CASEWORK_SMTP_CA_FILE",
        ),
    ],
)
def test_a_mail_setting_that_cannot_work_stops_the_start_with_one_line(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name in ("CASEWORK_SMTP_URL", "CASEWORK_NOTIFY_FROM", "CASEWORK_SMTP_CA_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        Settings.from_env()


def test_settings_carry_the_mail_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASEWORK_SMTP_URL", "smtps://u:p@mail.example.com")
    monkeypatch.setenv("CASEWORK_NOTIFY_FROM", SENDER)
    monkeypatch.delenv("CASEWORK_SMTP_CA_FILE", raising=False)
    assert Settings.from_env().mail == MailSettings(
        "mail.example.com", 465, SmtpSecurity.TLS, SENDER, "u", "p"
    )
    monkeypatch.delenv("CASEWORK_SMTP_URL")
    assert Settings.from_env().mail is None


# --- Apprise ---


def apprise_channel(url: str) -> ChannelTarget:
    return ChannelTarget(ChannelKind.APPRISE, url, timeout_seconds=5.0)


def json_url(receiver_url: str) -> str:
    """Apprise's JSON POST plugin, aimed at the receiver."""
    return receiver_url.replace("http://", "json://", 1)


async def test_apprise_posts_the_subject_and_text(client: Session, notice: Notice) -> None:
    async with webhook_receiver("unused", always(OK)) as receiver:
        await send_notice(client, apprise_channel(json_url(receiver.url)), notice)
        request = await receiver.next_arrival()
    assert request.method == "POST"
    assert request.path == "/casework/decisions"
    body = request.json()
    assert body["title"] == notice.subject
    assert body["message"] == notice.text
    assert LINK in body["message"]
    assert len(receiver.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, PermanentEffectError),
        (404, PermanentEffectError),
        (429, TransientEffectError),
        (503, TransientEffectError),
    ],
)
async def test_an_apprise_failure_is_classified_by_the_status_it_logs(
    client: Session, notice: Notice, status: int, error: type[Exception]
) -> None:
    async with webhook_receiver("unused", always(Reply(status))) as receiver:
        with pytest.raises(error, match=f"HTTP {status}"):
            await send_notice(client, apprise_channel(json_url(receiver.url)), notice)
    assert len(receiver.requests) == 1


async def test_apprise_to_nothing_listening_is_transient(client: Session, notice: Notice) -> None:
    with pytest.raises(TransientEffectError, match="Apprise"):
        await send_notice(client, apprise_channel(f"json://127.0.0.1:{free_port()}/"), notice)


@pytest.mark.parametrize("url", ["nosuchservice://x", "not a url at all"])
async def test_a_url_apprise_cannot_use_is_permanent(
    client: Session, notice: Notice, url: str
) -> None:
    with pytest.raises(PermanentEffectError, match="Apprise URL"):
        await send_notice(client, apprise_channel(url), notice)


# --- Slack and Teams incoming webhooks ---


async def test_slack_gets_text_and_blocks_with_the_link(client: Session, notice: Notice) -> None:
    async with webhook_receiver("unused", always(OK)) as receiver:
        await send_notice(client, ChannelTarget(ChannelKind.SLACK, receiver.url), notice)
        request = await receiver.next_arrival()
    body = request.json()
    assert request.headers["content-type"] == "application/json"
    assert body["text"] == notice.text
    assert body["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": notice.subject},
    }
    [button] = body["blocks"][-1]["elements"]
    assert button["url"] == LINK
    assert len(receiver.requests) == 1


async def test_teams_gets_an_adaptive_card_with_the_link(client: Session, notice: Notice) -> None:
    async with webhook_receiver("unused", always(OK)) as receiver:
        await send_notice(client, ChannelTarget(ChannelKind.TEAMS, receiver.url), notice)
        request = await receiver.next_arrival()
    body = request.json()
    assert body["type"] == "message"
    [attachment] = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard"
    assert card["body"][0]["text"] == notice.subject
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "Open in Casework", "url": LINK}]
    facts = {fact["title"]: fact["value"] for fact in card["body"][2]["facts"]}
    assert facts["Waits for"] == "payments reviewers"


@pytest.mark.parametrize("kind", [ChannelKind.SLACK, ChannelKind.TEAMS])
async def test_429_with_retry_after_is_transient_and_says_when(
    client: Session, notice: Notice, kind: ChannelKind
) -> None:
    async with webhook_receiver(
        "unused", always(Reply(429, headers=(("Retry-After", "7"),)))
    ) as receiver:
        with pytest.raises(TransientEffectError) as caught:
            await send_notice(client, ChannelTarget(kind, receiver.url), notice)
    assert caught.value.retry_after == 7.0


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, PermanentEffectError),
        (404, PermanentEffectError),
        (410, PermanentEffectError),
        (503, TransientEffectError),
        (408, TransientEffectError),
    ],
)
async def test_a_webhook_answer_is_classified_by_its_status(
    client: Session, notice: Notice, status: int, error: type[Exception]
) -> None:
    async with webhook_receiver("unused", always(Reply(status, body=b"no_service"))) as receiver:
        with pytest.raises(error, match=f"HTTP {status}"):
            await send_notice(client, ChannelTarget(ChannelKind.SLACK, receiver.url), notice)
    assert len(receiver.requests) == 1


async def test_a_refused_connection_is_transient(client: Session, notice: Notice) -> None:
    target = f"http://127.0.0.1:{free_port()}/hook"
    with pytest.raises(TransientEffectError) as caught:
        await send_notice(client, ChannelTarget(ChannelKind.TEAMS, target), notice)
    assert caught.value.retry_after is None


async def test_a_kind_given_as_stored_is_sent_and_an_unknown_one_is_permanent(
    client: Session, notice: Notice
) -> None:
    async with webhook_receiver("unused", always(OK)) as receiver:
        await send_notice(client, ChannelTarget("SLACK", receiver.url), notice)  # type: ignore[arg-type]
        assert (await receiver.next_arrival()).json()["text"] == notice.text
    with pytest.raises(PermanentEffectError, match="PIGEON"):
        await send_notice(client, ChannelTarget("PIGEON", "coop://roof"), notice)  # type: ignore[arg-type]
