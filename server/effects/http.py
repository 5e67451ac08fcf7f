"""The worker's HTTP client for what it delivers: decisions' webhooks, redrives, events to
endpoints, and Slack and Teams notices. One aiohttp session per worker, opened and closed
with it, its connections capped at the worker's concurrency.

aiohttp rather than httpx: under load httpcore's pool scanned every connection for every
request, and its CPU per POST was about ten times aiohttp's (docs/benchmarks.md). What a
receiver and an operator see stays as it was with httpx: the same request bytes (the
caller's headers and body), no redirect followed, a timeout per phase (connect, each read),
the same CA bundle, proxies from the environment, and a failure recorded under httpx's
names (`ConnectError: ...`, `ReadError: ...`) so that stored errors, alerts and searches
written against them keep matching.
"""

from __future__ import annotations

import codecs
import email.message
import os
import socket
import ssl
from dataclasses import dataclass

import aiohttp
import certifi
from multidict import CIMultiDictProxy

Session = aiohttp.ClientSession

# What a POST may raise short of an answer: every one is worth another try.
TRANSPORT_ERRORS = (aiohttp.ClientError, OSError)


def _ssl_context() -> ssl.SSLContext:
    """The CA bundle httpx used: SSL_CERT_FILE or SSL_CERT_DIR when set, else certifi's."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    return ssl.create_default_context(cafile=certifi.where())


def open_session(concurrency: int) -> Session:
    """A session for one worker (use as `async with`): at most `concurrency` connections,
    as many as the attempts it runs at once. Proxies come from the environment (HTTP_PROXY,
    HTTPS_PROXY, NO_PROXY), as httpx took them."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0, ssl=_ssl_context())
    return aiohttp.ClientSession(connector=connector, trust_env=True)


def timeout(seconds: float) -> aiohttp.ClientTimeout:
    """A queue's or endpoint's timeout bounds each phase, not the whole exchange: getting a
    connection (waiting for a free one included), and each wait for the receiver's bytes.
    A receiver that keeps sending is not cut off."""
    return aiohttp.ClientTimeout(
        total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
    )


@dataclass(frozen=True)
class Reply:
    """A receiver's answer, its body read in full (which frees the connection)."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    @property
    def success(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        """The body as text: the Content-Type's charset when Python knows it, else UTF-8;
        bytes that do not decode are replaced, never an error."""
        if not self.body:
            return ""
        return self.body.decode(_charset(self.headers.get("Content-Type")), errors="replace")


def _charset(content_type: str | None) -> str:
    if content_type is None:
        return "utf-8"
    message = email.message.Message()
    message["content-type"] = content_type
    charset = message.get_content_charset(failobj=None)
    if charset is None:
        return "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    return charset


async def post(
    session: Session, url: str, *, body: bytes, headers: dict[str, str], timeout_seconds: float
) -> Reply:
    """One POST of `body` with exactly `headers` (besides Host, Content-Length, Accept,
    Accept-Encoding and User-Agent); a redirect is an answer, not followed. Raises one of
    TRANSPORT_ERRORS when no answer came (TimeoutError among them)."""
    async with session.post(
        url,
        data=body,
        headers=headers,
        timeout=timeout(timeout_seconds),
        allow_redirects=False,
    ) as response:
        return Reply(response.status, response.headers, await response.read())


def failure(error: BaseException) -> str:
    """What to record for a POST that got no answer, named as httpx named it."""
    return f"{_httpx_name(error)}: {_detail(error)}"


def _httpx_name(error: BaseException) -> str:
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return "ConnectTimeout"
    if isinstance(error, aiohttp.SocketTimeoutError):
        return "ReadTimeout"
    if isinstance(error, TimeoutError):
        return "PoolTimeout"
    if isinstance(error, aiohttp.ClientProxyConnectionError):
        return "ProxyError"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "ConnectError"
    if isinstance(
        error, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError
    ) or _bad_answer(error):
        return "RemoteProtocolError"
    if isinstance(error, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return "UnsupportedProtocol"
    if isinstance(error, OSError):
        return "ReadError"
    return type(error).__name__


def _bad_answer(error: BaseException) -> bool:
    """aiohttp's parser refusing what came back (a bad status line or header)."""
    return isinstance(error, aiohttp.ClientResponseError) and not isinstance(
        error, aiohttp.ContentTypeError
    )


def _detail(error: BaseException) -> str:
    if isinstance(error, aiohttp.ClientConnectorError):
        cause = error.os_error
        if isinstance(cause, socket.gaierror | ssl.SSLError):
            return str(cause)
        # anyio's words for a refused or unreachable address, as httpx recorded them.
        return "All connection attempts failed"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "Server disconnected without sending a response."
    if isinstance(error, aiohttp.ClientPayloadError):
        why = error.__cause__ or error
        return f"peer closed connection without sending complete message body ({why})"
    if isinstance(error, aiohttp.ClientResponseError):
        return " ".join(error.message.split())
    return str(error)
