"""CaseworkClient: the generated client (`.graphql`, every operation of queries.graphql) and
the helpers an integration needs, raising typed errors (casework_client.errors) for the
failure members of each result union."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from types import SimpleNamespace, TracebackType
from typing import Any, Protocol, Self, TypeVar, cast

import httpx
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedError,
    InvalidStatus,
    WebSocketException,
)

from casework_client.cursors import CursorStore
from casework_client.errors import (
    NotFoundError,
    RequestError,
    WaitTimeout,
    raise_for_result,
)
from casework_client.generated import (
    Consequence,
    DecisionFields,
    EnqueueItemsEnqueueItemsEnqueuedItemsItems,
    GeneratedClient,
    ItemState,
    NewItemInput,
    RaiseExceptionInput,
    RaiseExceptionRaiseExceptionExceptionRaised,
    ReportRedriveResultInput,
    ReportRedriveResultReportRedriveResultRedriveResultRecorded,
)
from casework_client.generated.exceptions import (
    GraphQLClientError,
    GraphQLClientGraphQLMultiError,
    GraphQLClientHttpError,
)

log = logging.getLogger("casework_client")

EnqueuedItem = EnqueueItemsEnqueueItemsEnqueuedItemsItems
ExceptionRaised = RaiseExceptionRaiseExceptionExceptionRaised
RedriveResultRecorded = ReportRedriveResultReportRedriveResultRedriveResultRecorded
DecisionHandler = Callable[[DecisionFields], Awaitable[object]]

# Error codes (extensions.code) worth a retry: the service or its database is busy or away.
TRANSIENT_CODES = frozenset({"UNAVAILABLE", "INTERNAL"})
# Socket close codes that say "do not come back with these credentials": the token was
# revoked or expired (4403), or the server refused the request (44xx of graphql-ws).
PERMANENT_CLOSE_CODES = frozenset({4400, 4401, 4403, 4406, 4409})

T = TypeVar("T")


class HasId(Protocol):
    @property
    def id(self) -> str: ...


class Backoff:
    """Waits between reconnections: doubling from `first` up to `cap`, with jitter, so that
    many clients of a restarted server do not all come back at the same instant."""

    def __init__(self, first: float, cap: float) -> None:
        self.first, self.cap = first, cap
        self.delay = first

    def reset(self) -> None:
        self.delay = self.first

    async def wait(self) -> None:
        await asyncio.sleep(self.delay * random.uniform(0.5, 1.0))
        self.delay = min(self.delay * 2, self.cap)


def _code(error: GraphQLClientGraphQLMultiError) -> str | None:
    for one in error.errors:
        code = (one.extensions or {}).get("code")
        if isinstance(code, str):
            return code
    return None


def _request_error(error: Exception) -> RequestError:
    if isinstance(error, GraphQLClientGraphQLMultiError):
        return RequestError(str(error), code=_code(error))
    if isinstance(error, GraphQLClientHttpError):
        code = "UNAUTHENTICATED" if error.status_code == 401 else None
        return RequestError(f"HTTP {error.status_code}", code=code)
    if isinstance(error, ConnectionClosedError) and error.rcvd is not None:
        return RequestError(f"socket closed: {error.rcvd.code} {error.rcvd.reason}")
    return RequestError(str(error) or type(error).__name__)


def is_transient(error: BaseException) -> bool:
    """True for a failure a reconnection may cure: the server restarting, a network fault,
    a busy database. False for what the same request would meet again (a revoked token, an
    unknown queue, a document the server refuses)."""
    if isinstance(error, GraphQLClientGraphQLMultiError):
        return _code(error) in TRANSIENT_CODES
    if isinstance(error, ConnectionClosed):
        received = error.rcvd
        return received is None or received.code not in PERMANENT_CLOSE_CODES
    if isinstance(error, InvalidStatus):
        return error.response.status_code >= 500
    if isinstance(error, GraphQLClientHttpError):
        return error.status_code >= 500
    return isinstance(error, OSError | TimeoutError | httpx.TransportError | GraphQLClientError)


class _GraphQLClient(GeneratedClient):
    """The generated client, but a subscription's `next` message that carries errors raises
    them: the generated base client passes over such a message (its data is null) and then
    ends quietly on the `complete` that follows, which would look like a stream the server
    ended rather than one it refused."""

    async def _handle_ws_message(
        self, message: Any, websocket: Any, expected_type: Any = None
    ) -> dict[str, Any] | None:
        parsed = json.loads(message)
        if isinstance(parsed, dict) and parsed.get("type") == "next":
            payload = parsed.get("payload") or {}
            if payload.get("errors"):
                raise GraphQLClientGraphQLMultiError.from_errors_dicts(
                    errors_dicts=payload["errors"], data=payload.get("data")
                )
        handled: dict[str, Any] | None = await super()._handle_ws_message(
            message, websocket, expected_type
        )
        return handled


def websocket_url(graphql_url: str) -> str:
    if graphql_url.startswith("https://"):
        return "wss://" + graphql_url.removeprefix("https://")
    return "ws://" + graphql_url.removeprefix("http://")


class CaseworkClient:
    """A client of one Casework service with one bearer token.

    `url` is the service's base URL (`https://casework.example.com`) or its `/graphql`
    endpoint. Use it as an async context manager, or call `aclose()`.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        reconnect_max_seconds: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        base = url.rstrip("/")
        graphql_url = base if base.endswith("/graphql") else base + "/graphql"
        authorization = f"Bearer {token}"
        self.reconnect_max_seconds = reconnect_max_seconds
        self.graphql: GeneratedClient = _GraphQLClient(
            url=graphql_url,
            # httpx's client, which the generated Protocol describes loosely.
            http_client=cast(
                Any,
                httpx.AsyncClient(
                    headers={"Authorization": authorization}, timeout=timeout, transport=transport
                ),
            ),
            ws_url=websocket_url(graphql_url),
            ws_connection_init_payload={"authorization": authorization},
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.graphql.http_client.aclose()

    async def _call(self, operation: Awaitable[T]) -> T:
        """Awaits a generated operation; a failed request becomes RequestError."""
        try:
            return await operation
        except (GraphQLClientError, httpx.HTTPError) as error:
            raise _request_error(error) from error

    # -- review items ------------------------------------------------------------------

    async def enqueue_items(
        self, queue: str, items: Iterable[NewItemInput | Mapping[str, Any]]
    ) -> list[EnqueuedItem]:
        """Adds items to `queue`, all or nothing; idempotent on each `externalKey` (a known
        key with a new payload updates its pending item). Items are NewItemInput or dicts
        with the API's names (`externalKey`, `payload`, `priority`, `dueAt`, `subjectRef`)."""
        inputs = [
            item if isinstance(item, NewItemInput) else NewItemInput.model_validate(item)
            for item in items
        ]
        answer = await self._call(self.graphql.enqueue_items(queue=queue, items=inputs))
        result = answer.enqueue_items
        raise_for_result(result)
        assert result.typename__ == "EnqueuedItems"
        return list(result.items)

    async def decision_of(self, item: str | HasId) -> DecisionFields | None:
        """The item's final decision: the effective one once the item is DECIDED (an
        escalation or a decision waiting for its second review is not final); else None.
        NotFoundError when no item with this id is in the token's queues."""
        item_id = item if isinstance(item, str) else item.id
        found = (await self._call(self.graphql.get_item(id=item_id))).item
        if found is None:
            missing = SimpleNamespace(
                typename__="NotFound", message=f"no item {item_id} that your token covers"
            )
            raise NotFoundError(missing)
        if found.state is ItemState.DECIDED and found.current_decision is not None:
            return found.current_decision
        return None

    async def wait_for_decision(
        self,
        item: str | HasId,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the documented deadline)
        poll_seconds: float = 2.0,
        recheck_seconds: float = 30.0,
    ) -> DecisionFields:
        """Waits for the item's final decision (see decision_of) and returns it.

        Listens to the item's `itemUpdates` subscription and reads the item again on each
        update. While the subscription cannot be held (no websocket through a proxy, the
        service restarting), it polls every `poll_seconds`; while it is held, it still reads
        again at growing intervals up to `recheck_seconds`, which bounds the one race a
        subscription without an acknowledgement leaves (a decision made as it starts).
        WaitTimeout after `timeout` seconds (None: no limit): a timeout is never a decision.
        """
        item_id = item if isinstance(item, str) else item.id
        wake, live = asyncio.Event(), asyncio.Event()
        listener = asyncio.create_task(self._watch_item(item_id, wake, live))
        interval = poll_seconds / 2
        try:
            async with asyncio.timeout(timeout):
                while True:
                    wake.clear()
                    decision = await self.decision_of(item_id)
                    if decision is not None:
                        return decision
                    interval = min(interval * 2, recheck_seconds) if live.is_set() else poll_seconds
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), interval)
        except TimeoutError as error:
            raise WaitTimeout(f"no decision on item {item_id} within {timeout} s") from error
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    async def _watch_item(self, item_id: str, wake: asyncio.Event, live: asyncio.Event) -> None:
        """Sets `wake` on each update of the item; `live` while the subscription holds."""
        backoff = Backoff(0.1, self.reconnect_max_seconds)
        while True:
            live.set()
            try:
                async with contextlib.aclosing(
                    _generator(self.graphql.item_updates(item_id=item_id))
                ) as updates:
                    async for _ in updates:
                        backoff.reset()
                        wake.set()
            except Exception as error:
                live.clear()
                if not is_transient(error):
                    log.info("itemUpdates(%s) refused, polling instead: %s", item_id, error)
                    return
                log.info("itemUpdates(%s) lost, polling until it is back: %s", item_id, error)
            live.clear()
            await backoff.wait()
            # Whatever happened while the socket was down: read the item again.
            wake.set()

    # -- the decision stream -------------------------------------------------------------

    async def decision_events(
        self, queue: str, cursor_store: CursorStore, handler: DecisionHandler
    ) -> None:
        """Hands every decision of `queue` to `handler`, in commit order, at least once.

        Each decision is delivered when it takes effect (see the schema's decisionEvents).
        The decision's id is saved in `cursor_store` after `handler` returns, and the stream
        resumes after the saved cursor: across dropped sockets and service restarts (it
        reconnects by itself, backing off up to `reconnect_max_seconds`) and across restarts
        of this process. Without a saved cursor it starts now. A handler that raises ends
        the stream with its exception, that decision's cursor unsaved: it comes again on
        the next run, so a handler must tolerate seeing a decision twice (use its id).
        Runs until cancelled; a RequestError when the service refuses the subscription.
        """
        stream = f"decisionEvents:{queue}"
        backoff = Backoff(0.1, self.reconnect_max_seconds)
        while True:
            cursor = await cursor_store.load(stream)
            in_handler = False
            try:
                async with contextlib.aclosing(
                    _generator(self.graphql.decision_events(queue=queue, after=cursor))
                ) as events:
                    async for event in events:
                        backoff.reset()
                        decision = event.decision_events
                        in_handler = True
                        await handler(decision)
                        in_handler = False
                        await cursor_store.save(stream, decision.id)
                log.info("decisionEvents(%s) ended by the server; resuming", queue)
            except (GraphQLClientError, OSError, TimeoutError, WebSocketException) as error:
                if in_handler:
                    raise
                if not is_transient(error):
                    raise _request_error(error) from error
                log.info("decisionEvents(%s) lost (%s); resuming after %s", queue, error, cursor)
            await backoff.wait()

    # -- exceptions ----------------------------------------------------------------------

    async def raise_exception(
        self,
        workflow: str,
        source_record_id: str,
        reason_code: str,
        detail: str,
        consequence: Consequence | str,
        *,
        completed_steps: Iterable[str] = (),
        blocked_step: str | None = None,
        evidence: Iterable[str] = (),
        context: Mapping[str, Any] | None = None,
    ) -> ExceptionRaised:
        """Raises an exception of `workflow` about `source_record_id`, idempotently: while
        one is open for the same record and reason, this counts as a recurrence
        (`created` False). Evidence are references, never documents."""
        entry = RaiseExceptionInput.model_validate(
            {
                "workflow": workflow,
                "sourceRecordId": source_record_id,
                "reasonCode": reason_code,
                "detail": detail,
                "consequence": Consequence(consequence),
                "completedSteps": list(completed_steps),
                "blockedStep": blocked_step,
                "evidence": list(evidence),
                "context": dict(context) if context is not None else None,
            }
        )
        result = (await self._call(self.graphql.raise_exception(input=entry))).raise_exception
        raise_for_result(result)
        assert result.typename__ == "ExceptionRaised"
        return result

    async def report_redrive_result(
        self, redrive_key: str, succeeded: bool, detail: str | None = None
    ) -> RedriveResultRecorded:
        """The owning system's durable result of a redrive (the key its webhook or event
        carried). Reporting the same result again changes nothing (`already_reported`);
        another result for a reported key is InvalidTransitionError."""
        entry = ReportRedriveResultInput.model_validate(
            {"redriveKey": redrive_key, "succeeded": succeeded, "detail": detail}
        )
        answer = await self._call(self.graphql.report_redrive_result(input=entry))
        result = answer.report_redrive_result
        raise_for_result(result)
        assert result.typename__ == "RedriveResultRecorded"
        return result


def _generator(iterator: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """The generated subscriptions are async generators typed as iterators: closed here on
    every way out, so that their socket is too."""
    return cast(AsyncGenerator[T, None], iterator)
