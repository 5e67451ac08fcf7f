"""The graphql-transport-ws handler: Strawberry's, with the token kept honest for as long as
the socket is open, and errors a client can act on.

- `connection_init` carries the token as `authorization` (any case) or inside `headers`
  (`{"headers": {"Authorization": "Bearer …"}}`, any case): see `authorization_of`.
- Every operation that starts on the socket re-resolves the token first (through the
  CredentialResolver, so within CASEWORK_TOKEN_CACHE_SECONDS). A revoked or expired token gets an
  `error` message coded UNAUTHENTICATED and the socket is closed with 4403; nothing runs.
- A timer per socket (`_schedule_token_check`) closes it with 4403 at the token's expiry and
  when a periodic check finds it revoked, even if nothing happens on the socket. A check the
  database cannot answer is not a revocation: the token is trusted until it can be checked.
- Every error sent carries `extensions.code` (server/graphql/codes.py). A document refused by
  the parser or by validation gets an `error` message, and one log line, not a traceback.
- A subscribe names its document as an HTTP request does (server/graphql/documents/
  requests.py): its `query`, or a `documentId` (or Apollo's persisted query hash) in the
  payload. With CASEWORK_DOCUMENTS=trusted, a text that is not a trusted document's is
  refused with an `error` message coded DOCUMENT_NOT_TRUSTED; an unknown id is
  PERSISTED_DOCUMENT_NOT_FOUND. Only that operation is refused; the socket goes on.
- The handshake's Origin is checked before this handler exists, by Strawberry's view: no
  Origin (not a browser), the service's own origin, or one in CASEWORK_ALLOWED_ORIGINS
  (`allowed_origins` in server/app.py); any other is answered 403.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from graphql import GraphQLError, GraphQLFormattedError, GraphQLSyntaxError
from starlette.websockets import WebSocketDisconnect as StarletteWebSocketDisconnect
from starlette.websockets import WebSocketDisconnected as StarletteWebSocketDisconnected
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import Operation
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    ErrorMessage,
    Message,
    SubscribeMessage,
)
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.utils.aio import aclosing

from server.config_documents import DocumentMode
from server.graphql import observe
from server.graphql.codes import ErrorCode, code_of, with_code
from server.graphql.context import Context
from server.graphql.documents.manifest import TrustedDocuments
from server.graphql.documents.requests import DocumentRefusal, resolve_request
from server.graphql.multiplex import FrameKind, Key, Multiplexer, Scope, encode_next, key_of
from server.graphql.multiplex import shared_field as shared_root_field
from server.graphql.strawberry_internals import RefusingTransportWSHandler
from server.observability import metrics
from server.observability.context import REQUEST_ID, operation_request_id
from server.store.errors import is_unavailable

log = logging.getLogger("casework.ws")

# An open socket's token is looked up again every cache window, but at least this often
# (a longer cache would otherwise leave a revoked socket open for long) and at most this
# often (a cache of 0 would otherwise make the watch spin).
CHECK_AT_LEAST_EVERY_SECONDS = 5.0
CHECK_AT_MOST_EVERY_SECONDS = 1.0

# WebSocket's own "Try Again Later" (RFC 6455 registry): the graphql-transport-ws codes have
# none for a server that cannot check a token right now.
CLOSE_TRY_AGAIN_LATER = 1013
TRY_AGAIN_LATER_REASON = "the database is unavailable; try again later"

# What strawberry answers a subscribe beyond max_subscriptions_per_connection.
SUBSCRIPTION_LIMIT_MESSAGE = "Subscription limit reached"

UNAUTHENTICATED_MESSAGE = "the token was revoked or has expired: sign in again"

# What a send on a socket that is gone raises, from strawberry or from starlette.
_GONE = (WebSocketDisconnected, StarletteWebSocketDisconnect, StarletteWebSocketDisconnected)


class SharingView(Protocol):
    """The view this handler serves (server/app.py): it holds the process's groups."""

    multiplexer: Multiplexer
    documents: TrustedDocuments
    document_mode: DocumentMode

    def encode_json(self, data: object) -> str | bytes: ...


def authorization_of(params: Mapping[str, object]) -> str | None:
    """The bearer token of a connection_init payload, in any of the forms clients send."""
    found = _value_of(params, "authorization")
    if isinstance(found, str):
        return found
    headers = _value_of(params, "headers")
    if isinstance(headers, Mapping):
        found = _value_of(headers, "authorization")
        if isinstance(found, str):
            return found
    return None


def _value_of(mapping: Mapping[Any, object], name: str) -> object:
    for key, value in mapping.items():
        if isinstance(key, str) and key.lower() == name:
            return value
    return None


def _coded(errors: list[GraphQLError]) -> list[GraphQLError]:
    """Every error with its code. The schema's extensions code errors as they happen, the
    `next` payloads included (server/graphql/error_coding.py, guards.py); this covers what
    escapes them: a refusal the parser raises inside an extension's hook."""
    return [with_code(error, code_of(error)) for error in errors]


class TransportWSHandler(RefusingTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler; see the module's docstring. What it needs
    of Strawberry's private steps is in server/graphql/strawberry_internals.py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._token_timer: asyncio.TimerHandle | None = None
        self._token_check: asyncio.Task[None] | None = None
        # The socket's request id (observability/requests.py set it for the connection).
        self._request_id = REQUEST_ID.get()

    async def handle(self) -> None:
        metrics.WEBSOCKET_CONNECTIONS.inc()
        try:
            await super().handle()
        finally:
            metrics.WEBSOCKET_CONNECTIONS.dec()

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        try:
            await super().handle_connection_init(message)
        except Exception as error:
            if not is_unavailable(error):
                raise
            # The token cannot be looked up: neither a refusal nor a welcome.
            log.info("connection_init: the database is unavailable; closing with 1013")
            with contextlib.suppress(*_GONE):
                await self.websocket.close(CLOSE_TRY_AGAIN_LATER, TRY_AGAIN_LATER_REASON)
            return
        if self.connection_acknowledged and self._token_timer is None and self._token_check is None:
            self._start_token_watch()

    async def shutdown(self) -> None:
        timer, self._token_timer = self._token_timer, None
        if timer is not None:
            timer.cancel()
        check, self._token_check = self._token_check, None
        if check is not None:
            check.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await check
        await super().shutdown()

    # The token watch: between checks a socket keeps one timer handle (about 100 bytes), not
    # a sleeping task (about 2 kB with its coroutine), which counts with thousands of
    # consoles; the check itself runs in a task that lives as long as the lookup.

    def _start_token_watch(self) -> None:
        every = self._check_every()
        # Sockets opened together would otherwise all check at the same instant.
        self._schedule_token_check(every * random.random())

    def _check_every(self) -> float:
        ttl = self.context.tokens.ttl
        return min(CHECK_AT_LEAST_EVERY_SECONDS, max(CHECK_AT_MOST_EVERY_SECONDS, ttl))

    def _schedule_token_check(self, wait: float) -> None:
        expires_at = self.context.expires_at
        if expires_at is not None:
            wait = min(wait, (expires_at - datetime.now(UTC)).total_seconds())
        loop = asyncio.get_running_loop()
        self._token_timer = loop.call_later(max(0.0, wait), self._begin_token_check)

    def _begin_token_check(self) -> None:
        self._token_timer = None
        self._token_check = asyncio.create_task(self._check_token(), name="casework-ws-token")

    async def _check_token(self) -> None:
        """Closes the socket at the token's expiry, or when the check finds it revoked."""
        try:
            valid = await self.context.token_valid()
        except Exception:
            # A bug, not a refusal: say so, and keep the socket and the watch.
            log.exception("checking the token of an open socket failed")
            valid = None
        self._token_check = None
        if valid is False:
            log.info("closing a socket: its token was revoked or has expired")
            await self._close_unauthorized()
            return
        self._schedule_token_check(self._check_every())

    async def _close_unauthorized(self) -> None:
        with contextlib.suppress(*_GONE):
            await self.context.close_socket_unauthorized()

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        payload = message.get("payload")
        if (
            not self.connection_acknowledged
            or message.get("id") in self.operations
            or not isinstance(payload, dict)
        ):
            # Strawberry's own answers: the socket is closed.
            await super().handle_subscribe(message)
            return
        view = cast(SharingView, self.view)
        resolved = resolve_request(payload, view.documents, view.document_mode)
        if isinstance(resolved, DocumentRefusal):
            await self._refuse_document(message["id"], resolved)
            return
        # Strawberry reads the document from `query`: the trusted text when named by id.
        message["payload"] = {
            **payload,
            "query": resolved.query,
            "operationName": resolved.operation_name,
        }
        await super().handle_subscribe(message)

    async def _refuse_document(self, operation_id: str, refusal: DocumentRefusal) -> None:
        """One operation's refusal, with its access line; the socket goes on."""
        with observe.observed("websocket") as record:
            record.caller(self.context.principal)
            record.refuse(refusal.message)
            try:
                error: GraphQLFormattedError = {
                    "message": refusal.message,
                    "extensions": {"code": refusal.code.value},
                }
                with contextlib.suppress(*_GONE):
                    await self.send_message(
                        {"id": operation_id, "type": "error", "payload": [error]}
                    )
            finally:
                record.finish()

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        # Each operation runs in a task of its own: its id and record stay its own.
        REQUEST_ID.set(operation_request_id(self._request_id, operation.id))
        with observe.observed("websocket") as record:
            record.caller(self.context.principal)
            try:
                await self._run_operation(operation, record)
            except BaseException as error:
                if not isinstance(error, asyncio.CancelledError | _GONE):
                    record.failed = True
                raise
            finally:
                record.finish()

    async def _run_operation(
        self, operation: Operation[Context, None], record: observe.OperationRecord
    ) -> None:
        try:
            valid = await self.context.token_valid()
        except Exception as error:
            valid = True
            await self.handle_task_exception(error)
        if valid is False:
            record.refuse(UNAUTHENTICATED_MESSAGE)
            refusal: GraphQLFormattedError = {
                "message": UNAUTHENTICATED_MESSAGE,
                "extensions": {"code": ErrorCode.UNAUTHENTICATED.value},
            }
            message: ErrorMessage = {"id": operation.id, "type": "error", "payload": [refusal]}
            with contextlib.suppress(*_GONE):
                await operation.send_operation_message(message)
            await self._close_unauthorized()
            return
        view = cast(SharingView, self.view)
        key = self._shared_key(operation, view.multiplexer)
        if key is None:
            await super().run_operation(operation)
            return
        try:
            await self._run_shared(operation, key, view, record)
        except Exception as error:
            # As strawberry's run_operation ends an operation that failed.
            await self.handle_task_exception(error)
            with contextlib.suppress(Exception):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
            self.operations.pop(operation.id, None)
            raise

    # --- multiplexed subscriptions (server/graphql/multiplex.py) ---------------------------

    def _shared_key(
        self, operation: Operation[Context, None], multiplexer: Multiplexer
    ) -> tuple[Key, str] | None:
        if not multiplexer.enabled or self.context.socket is None:
            return None
        root_field = shared_root_field(operation.query, operation.operation_name)
        if root_field is None:
            return None
        key = key_of(
            operation.query,
            operation.operation_name,
            operation.variables,
            Scope.of(self.context.principal),
        )
        return None if key is None else (key, root_field)

    async def _run_shared(
        self,
        operation: Operation[Context, None],
        shared: tuple[Key, str],
        view: SharingView,
        record: observe.OperationRecord,
    ) -> None:
        """One member of a group: the group's messages, each after this socket's own token
        check, sent with this operation's id."""
        key, root_field = shared
        context = self.context
        socket = context.socket
        assert socket is not None
        multiplexer = view.multiplexer
        member = multiplexer.join(
            key, root_field, self.schema, context, operation.id, view.encode_json
        )
        own_snapshot = member.group.snapshot_first and member.group.produced
        counted = False
        try:
            if own_snapshot:
                first = await self._own_first_payload(operation, view)
                if first is None:
                    return
                # A figure the group sent meanwhile is as new: it goes instead (as in
                # Hub.watch_backlog).
                if not member.has_pending():
                    await socket.send_text(member.prefix + first + "}")
            record.operation_type, record.root_fields = "subscription", (root_field,)
            record.subscribed, counted = (root_field,), True
            metrics.SUBSCRIPTIONS.labels(root_field).inc()
            while True:
                frame = await member.next()
                if frame.kind is FrameKind.NEXT:
                    if not await context.still_authorized():
                        break
                    await socket.send_text(member.message(frame))
                elif frame.kind is FrameKind.ERROR:
                    await operation.send_initial_errors(_coded(list(frame.errors)))
                    return
                else:
                    break
            with contextlib.suppress(*_GONE):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
        finally:
            if counted:
                metrics.SUBSCRIPTIONS.labels(root_field).dec()
                record.subscribed = ()
            await multiplexer.leave(member)

    async def _own_first_payload(
        self, operation: Operation[Context, None], view: SharingView
    ) -> str | None:
        """A first snapshot of this member's own, executed as a subscription of its own
        would; None if that ended the operation (its error or completion was sent)."""
        source = await self.schema.stream(
            operation.query,
            variable_values=operation.variables,
            context_value=self.context,
            root_value=self.root_value,
            operation_name=operation.operation_name,
        )
        async with aclosing(source):
            try:
                result = await anext(source)
            except StopAsyncIteration:
                result = None
            except GraphQLSyntaxError as error:
                observe.note_refusal(error.message)
                await operation.send_initial_errors(_coded([error]))
                return None
        if isinstance(result, ExecutionResult) and not result.errors:
            return encode_next(result, view.encode_json)
        if isinstance(result, PreExecutionError):
            await operation.send_initial_errors(_coded(list(result.errors or ())))
            return None
        if isinstance(result, ExecutionResult):
            await operation.send_next(result)
        await operation.send_operation_message({"id": operation.id, "type": "complete"})
        return None

    async def refuse_escaped_syntax_error(
        self, operation: Operation[Context, None], error: GraphQLSyntaxError
    ) -> None:
        observe.note_refusal(error.message)
        await operation.send_initial_errors(_coded([error]))

    async def refuse_before_execution(
        self, operation: Operation[Context, None], errors: list[GraphQLError]
    ) -> None:
        # Only that operation is refused, with its code; the socket goes on.
        await operation.send_initial_errors(_coded(errors))

    async def send_message(self, message: Message) -> None:
        if message["type"] == "error":
            # Strawberry's own refusals (the operation limit per socket) carry no code.
            for error in message["payload"]:
                extensions = error.setdefault("extensions", {})
                if error["message"] == SUBSCRIPTION_LIMIT_MESSAGE:
                    extensions.setdefault("code", ErrorCode.LIMIT_EXCEEDED.value)
                extensions.setdefault("code", ErrorCode.BAD_REQUEST.value)
        await super().send_message(message)

    async def handle_task_exception(self, error: Exception) -> None:
        # A client that drops its connection, or a socket closed for its token, makes the
        # next send of each of its operations fail. That ends the operation, as it should;
        # strawberry would also log it as "Exception in worker task" with a traceback.
        if isinstance(error, _GONE):
            log.debug("operation ended: its socket is closed")
            return
        await super().handle_task_exception(error)
