"""A real SMTP server for the notification tests: aiosmtpd's Controller on a free port of
127.0.0.1 (its own thread and event loop), keeping every message it accepts, parsed by the
email package.

    with smtp_server() as server:
        settings = server.mail_settings()          # what CASEWORK_SMTP_URL would give
        ... send ...
        await server.wait_for(1)                   # the messages, once there are that many
        message = server.messages[0].message       # an EmailMessage

Options: `refuse` maps a recipient to the reply its RCPT gets ("550 5.1.1 no such user"),
`data_reply` replaces the 250 after DATA ("451 4.3.0 try later"), `login` requires AUTH
with that (user, password), `tls` is "starttls" (required before MAIL) or "implicit"
(smtps), with a certificate made for 127.0.0.1 whose PEM `ca_file` holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Literal

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from server.config_mail import MailSettings, SmtpSecurity
from tests.api.live_server import free_port


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    message: EmailMessage
    # Whether the session had authenticated, and over TLS.
    authenticated: bool
    tls: bool


@dataclass
class _Handler:
    refuse: dict[str, str]
    data_reply: str | None
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Events of tests waiting for a message, set from the server's thread on each arrival.
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.data_reply is not None:
            return self.data_reply
        content = envelope.original_content or b""
        parsed = message_from_bytes(content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.lock:
            self.received.append(
                Received(
                    mail_from=envelope.mail_from or "",
                    rcpt_tos=tuple(envelope.rcpt_tos),
                    message=parsed,
                    authenticated=bool(session.authenticated),
                    # STARTTLS sets session.ssl; implicit TLS shows on the transport.
                    tls=session.ssl is not None
                    or (
                        server.transport is not None
                        and server.transport.get_extra_info("ssl_object") is not None
                    ),
                )
            )
            for loop, arrived in self.waiters:
                loop.call_soon_threadsafe(arrived.set)
        return "250 Message accepted"


@dataclass
class SmtpServer:
    host: str
    port: int
    security: SmtpSecurity
    login: tuple[str, str] | None
    ca_file: Path | None
    _handler: _Handler

    @property
    def received(self) -> list[Received]:
        with self._handler.lock:
            return list(self._handler.received)

    @property
    def messages(self) -> list[Received]:
        return self.received

    def mail_settings(
        self, sender: str = "Casework <casework@example.test>", **overrides: Any
    ) -> MailSettings:
        """What CASEWORK_SMTP_URL (+ CASEWORK_NOTIFY_FROM, CASEWORK_SMTP_CA_FILE) pointing at
        this server gives."""
        values: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "security": self.security,
            "sender": sender,
            "username": self.login[0] if self.login else None,
            "password": self.login[1] if self.login else None,
            "ca_file": self.ca_file,
        }
        values.update(overrides)
        return MailSettings(**values)

    @property
    def url(self) -> str:
        """A CASEWORK_SMTP_URL for this server."""
        scheme = "smtps" if self.security is SmtpSecurity.TLS else "smtp"
        credentials = f"{self.login[0]}:{self.login[1]}@" if self.login else ""
        query = "?starttls=true" if self.security is SmtpSecurity.STARTTLS else ""
        return f"{scheme}://{credentials}{self.host}:{self.port}{query}"

    async def wait_for(self, count: int, within: float = 10.0) -> list[Received]:
        """The messages received, once there are at least `count` (fails after `within`)."""
        arrived = asyncio.Event()
        waiter = (asyncio.get_running_loop(), arrived)
        with self._handler.lock:
            self._handler.waiters.append(waiter)
        deadline = time.monotonic() + within
        try:
            while len(self.received) < count and (left := deadline - time.monotonic()) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), left)
                arrived.clear()
        finally:
            with self._handler.lock:
                self._handler.waiters.remove(waiter)
        received = self.received
        assert len(received) >= count, f"{len(received)} messages arrived, {count} expected"
        return received


@contextmanager
def smtp_server(
    *,
    refuse: dict[str, str] | None = None,
    data_reply: str | None = None,
    login: tuple[str, str] | None = None,
    tls: Literal["starttls", "implicit"] | None = None,
) -> Iterator[SmtpServer]:
    handler = _Handler(refuse=dict(refuse or {}), data_reply=data_reply)
    host = "127.0.0.1"
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="casework-smtp-") as scratch:
        context = ca_file = None
        if tls is not None:
            context, ca_file = _certificate(Path(scratch), host)
        kwargs: dict[str, Any] = {"hostname": host, "port": port, "server_hostname": "mx.test"}
        if login is not None:

            def authenticate(
                server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
            ) -> AuthResult:
                ok = (
                    isinstance(data, LoginPassword)
                    and (
                        data.login.decode(),
                        data.password.decode(),
                    )
                    == login
                )
                return AuthResult(success=ok, handled=False)

            kwargs.update(authenticator=authenticate, auth_required=True)
            # Without TLS (a relay on the same host), AUTH is allowed in the clear.
            kwargs["auth_require_tls"] = tls is not None
        if tls == "starttls":
            kwargs.update(tls_context=context, require_starttls=True)
        elif tls == "implicit":
            kwargs["ssl_context"] = context
        controller = Controller(handler, **kwargs)
        controller.start()
        try:
            yield SmtpServer(
                host=host,
                port=port,
                security={
                    None: SmtpSecurity.NONE,
                    "starttls": SmtpSecurity.STARTTLS,
                    "implicit": SmtpSecurity.TLS,
                }[tls],
                login=login,
                ca_file=ca_file,
                _handler=handler,
            )
        finally:
            controller.stop()


def _certificate(directory: Path, host: str) -> tuple[ssl.SSLContext, Path]:
    """A self-signed certificate for `host` (its own authority): the server's context, and
    the PEM a client trusts it with."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "casework test SMTP")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file = directory / "smtp.pem"
    key_file = directory / "smtp.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file
