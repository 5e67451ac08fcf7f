"""The ids a log line carries without being handed them: who asked, and about what.

Context variables, so that every line a request causes (in the GraphQL layer, the domain,
the store) carries its request id, and every line of the worker about a decision carries
the decision id (the key that joins them to the line of the request that recorded it).
"""

from __future__ import annotations

import re
import secrets
from contextvars import ContextVar

REQUEST_ID: ContextVar[str | None] = ContextVar("casework_request_id", default=None)
DECISION_ID: ContextVar[int | None] = ContextVar("casework_decision_id", default=None)

REQUEST_ID_HEADER = "x-request-id"
# A caller's id is kept only if it is short and plain: it goes into every log line, where a
# newline or a control character could forge lines of its own.
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
_OPERATION_ID_LIMIT = 64


def new_request_id() -> str:
    return secrets.token_hex(8)


def request_id_from(sent: str | None) -> str:
    """The caller's X-Request-ID when it is acceptable, a fresh one otherwise."""
    if sent is not None and _ACCEPTABLE_ID.fullmatch(sent):
        return sent
    return new_request_id()


def operation_request_id(socket_id: str | None, operation_id: str) -> str:
    """A websocket operation's id: its socket's request id, then the client's operation id
    (cut, and kept only if plain), so a client can tell its operations apart in the log."""
    operation = operation_id[:_OPERATION_ID_LIMIT]
    if not _ACCEPTABLE_ID.fullmatch(operation):
        operation = new_request_id()
    return f"{socket_id or new_request_id()}:{operation}"
