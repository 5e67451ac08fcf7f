"""Multiplexed subscriptions: a document that many sockets subscribe to is executed once.

A console subscribes to `queueBacklog` and `leaseEvents` for its queue; a thousand consoles
send the same document with the same variables. Executing the selection once per event
for each of them (about 110 µs each) is most of the fan-out's cost, so subscriptions with
the same *key* share one execution (a `Group`):

- the document text and operation name, the variables (as canonical JSON), and the
  caller's *visibility scope*: the facts of the principal that change what the selection
  returns. For the two shared fields that is `Principal.works_in(queue)`, which depends on
  the role and the token's queues only; the group's context carries a principal with
  those and no user, so nothing one member may see can reach another through it.
- The group runs the operation through the schema once (extensions, guards and error
  masking included) with a `SharedContext`; each `next` payload is encoded once, and each
  member's message is that text with only its operation id spliced in.

What stays per member, as before: its socket, its own token check before each message
(CredentialResolver's cache makes it a dict look-up), complete/unsubscribe, and a bounded
outbox: `queueBacklog` keeps only the newest figure (as `LatestValue` did), `leaseEvents`
keeps INBOX_LIMIT messages and, past that, drops them for a RESYNC meant for that member
only (the group executes one, for the members waiting for it). A member that joins a
`queueBacklog` group after it sent its first figure gets its own first snapshot, read and
executed on its own (the snapshot semantics of a subscription are unchanged); a timer
event (EXPIRED, OVERDUE) announcing a deadline that passed before a member joined is not
sent to it, as the resolver's own filter does for a subscription of its own.

Only documents whose one root field is in SHARED_FIELDS, with no directive, are shared;
everything else runs per operation as before (server/graphql/websocket.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import functools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    OperationType,
    parse,
)
from strawberry.schema.base import BaseSchema
from strawberry.types.execution import ExecutionResult, PreExecutionError

from server.domain.model import Principal, Role
from server.events.channels import TIMER_KINDS, Event
from server.events.subscriber import INBOX_LIMIT, Inbox, LatestValue, Message, Resync
from server.graphql.context import Context
from server.graphql.loaders import Loaders
from server.observability import metrics

log = logging.getLogger("casework.ws")

# Root fields whose result depends only on the arguments and the visibility scope, and
# whether a subscription of it starts with a snapshot of its own (queueBacklog does).
SHARED_FIELDS: Mapping[str, bool] = {"queueBacklog": True, "leaseEvents": False}
# Consoles send short documents; a longer one is not worth a cache entry.
MAX_SHARED_DOCUMENT_CHARS = 4000

TARGETED_RESYNC_REASON = "subscriber fell behind"


@functools.lru_cache(maxsize=256)
def shared_field(query: str, operation_name: str | None) -> str | None:
    """The root field if the document may be shared, else None (it then runs alone).

    A document the parser refuses is not shared either: the operation's own run refuses
    it, with the usual error. A directive anywhere (`@include`, `@defer`, ...) or a
    fragment at the root makes it unshared: kept simple rather than reasoned about.
    """
    if len(query) > MAX_SHARED_DOCUMENT_CHARS or "@" in query:
        return None
    try:
        document = parse(query, no_location=True)
    except GraphQLError:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is None:
        chosen = operations if len(operations) == 1 else []
    else:
        chosen = [o for o in operations if o.name is not None and o.name.value == operation_name]
    if len(chosen) != 1 or chosen[0].operation is not OperationType.SUBSCRIPTION:
        return None
    selections = chosen[0].selection_set.selections
    if len(selections) != 1 or not isinstance(selections[0], FieldNode):
        return None
    name = selections[0].name.value
    return name if name in SHARED_FIELDS else None


def encode_next(result: ExecutionResult, encode: Callable[[object], str | bytes]) -> str:
    """The payload of a `next` message, as strawberry's Operation.send_next builds it."""
    payload: dict[str, object] = {"data": result.data}
    if result.errors:
        payload["errors"] = [error.formatted for error in result.errors]
    if result.extensions:
        payload["extensions"] = result.extensions
    encoded = encode(payload)
    return encoded.decode() if isinstance(encoded, bytes) else encoded


@dataclass(frozen=True)
class Scope:
    """What of the principal a shared execution may depend on (see the module docstring)."""

    role: Role
    queues: frozenset[str]

    @classmethod
    def of(cls, principal: Principal) -> Scope:
        return cls(principal.role, principal.queues)

    def principal(self) -> Principal:
        return Principal("", self.role, self.queues)


@dataclass(frozen=True)
class Key:
    query: str
    operation_name: str | None
    variables: str
    scope: Scope


def key_of(
    query: str, operation_name: str | None, variables: dict[str, object] | None, scope: Scope
) -> Key | None:
    try:
        canonical = json.dumps(variables or {}, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    return Key(query, operation_name, canonical, scope)


class SharedContext(Context):
    """The one context a group executes with. Each member checks its own token before each
    message is sent to it, so the resolver's check here always passes; the resolver tells
    this context which inbox it listens on and which message it is turning into a result,
    so that the group can ask for a RESYNC meant for some members and judge timer events
    against when each member joined."""

    inboxes: list[Inbox | LatestValue[Any]]
    source: Message | None
    # The group's members (the set itself): how many subscriptions its channels serve.
    members: set[Member]

    async def token_valid(self) -> bool | None:
        return True

    def joined(self, channel: Inbox | LatestValue[Any]) -> None:
        self.inboxes.append(channel)
        channel.audience = max(1, len(self.members))

    def delivering(self, message: Message) -> None:
        self.source = message


class FrameKind(enum.Enum):
    NEXT = "next"
    ERROR = "error"
    COMPLETE = "complete"


@dataclass(frozen=True, slots=True)
class Frame:
    kind: FrameKind
    # NEXT: the encoded payload of the `next` message, shared by every member.
    payload: str = ""
    # ERROR: the operation's errors, sent as an `error` message by each member.
    errors: tuple[GraphQLError, ...] = ()
    resync: bool = False
    # For a timer event: when its deadline passed (see Member.since).
    passed_at: datetime | None = None


COMPLETE = Frame(FrameKind.COMPLETE)


class Member:
    """One operation of one socket in a group: what must differ between sockets."""

    __slots__ = ("_frames", "_waiter", "awaiting_resync", "group", "latest_only", "prefix", "since")

    def __init__(self, group: Group, operation_id: str) -> None:
        self.group = group
        # The `next` message up to its payload: the payload is spliced in after it.
        self.prefix = '{"id":' + json.dumps(operation_id) + ',"type":"next","payload":'
        self.since = datetime.now(UTC)
        # queueBacklog's figures coalesce: only the newest unsent one is kept.
        self.latest_only = group.snapshot_first
        # A list, not a deque: an empty deque takes 600 bytes, and there are thousands of
        # members, almost always with nothing pending.
        self._frames: list[Frame] = []
        self._waiter: asyncio.Future[None] | None = None
        self.awaiting_resync = False

    def message(self, frame: Frame) -> str:
        return self.prefix + frame.payload + "}"

    def has_pending(self) -> bool:
        return bool(self._frames)

    def offer(self, frame: Frame) -> None:
        if frame.passed_at is not None and frame.passed_at <= self.since:
            return
        if self.awaiting_resync:
            # What was dropped is covered by the re-read the RESYNC asks for; so is what
            # comes before it.
            if not frame.resync and frame.kind is FrameKind.NEXT:
                return
            self.awaiting_resync = False
        elif self.latest_only:
            if frame.kind is FrameKind.NEXT and self._frames:
                # The last frame can only be a NEXT: nothing follows an ending.
                self._frames.pop()
        elif len(self._frames) >= INBOX_LIMIT and frame.kind is FrameKind.NEXT:
            self._frames.clear()
            self.awaiting_resync = True
            self.group.fell_behind(self)
            return
        self._frames.append(frame)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self) -> Frame:
        while not self._frames:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._frames.pop(0)


class Group:
    """One execution of a key's operation, fanned out to its members."""

    def __init__(
        self,
        multiplexer: Multiplexer,
        key: Key,
        root_field: str,
        schema: BaseSchema,
        context: SharedContext,
        encode: Callable[[object], str | bytes],
    ) -> None:
        self._multiplexer = multiplexer
        self.key = key
        self.root_field = root_field
        self.snapshot_first = SHARED_FIELDS[root_field]
        self.members: set[Member] = set()
        context.members = self.members
        # True once a first payload went out: later members of a snapshot-first field
        # read their own first snapshot.
        self.produced = False
        self.executions = 0
        self._schema = schema
        self._context = context
        self._encode = encode
        self._waiting_resync: set[Member] = set()
        self._targeted: Resync | None = None
        # A task of its own, in an empty contextvars context: it belongs to no member's
        # operation record or request id.
        self._task = asyncio.create_task(
            self._run(), name=f"casework-shared:{root_field}", context=contextvars.Context()
        )

    def join(self, operation_id: str) -> Member:
        member = Member(self, operation_id)
        self.members.add(member)
        self._audience_changed()
        return member

    def leave(self, member: Member) -> bool:
        """True if that was the last member: the group is then to be closed."""
        self.members.discard(member)
        self._waiting_resync.discard(member)
        self._audience_changed()
        return not self.members

    def fell_behind(self, member: Member) -> None:
        """A member's outbox overflowed: a RESYNC is executed for the members waiting."""
        self._context.live.hub.overflows += 1
        self._waiting_resync.add(member)
        if self._targeted is None:
            self._targeted = Resync(TARGETED_RESYNC_REASON)
            for channel in self._context.inboxes:
                if isinstance(channel, Inbox):
                    channel.offer(self._targeted)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def _audience_changed(self) -> None:
        # The hub counts subscriptions, not executions (/healthz `subscribers`).
        for channel in self._context.inboxes:
            channel.audience = max(1, len(self.members))

    async def _run(self) -> None:
        key = self.key
        variables: dict[str, object] = json.loads(key.variables)
        try:
            source = await self._schema.stream(
                key.query,
                variable_values=variables,
                context_value=self._context,
                operation_name=key.operation_name,
            )
            try:
                first = True
                async for result in source:
                    if first and isinstance(result, PreExecutionError):
                        self._end(Frame(FrameKind.ERROR, errors=tuple(result.errors or ())))
                        return
                    if not isinstance(result, ExecutionResult):
                        error = GraphQLError(
                            "Incremental delivery is not supported over graphql-transport-ws"
                        )
                        self._end(Frame(FrameKind.ERROR, errors=(error,)))
                        return
                    first = False
                    self._publish(result)
            except GraphQLSyntaxError as error:
                # Raised inside an extension's hook (see websocket.py): one operation's refusal.
                self._end(Frame(FrameKind.ERROR, errors=(error,)))
                return
            finally:
                await source.aclose()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("a shared subscription failed")
            self._end(COMPLETE)
            return
        self._end(COMPLETE)

    def _publish(self, result: ExecutionResult) -> None:
        text = encode_next(result, self._encode)
        source, self._context.source = self._context.source, None
        passed_at = None
        if isinstance(source, Event) and source.kind in TIMER_KINDS:
            passed_at = source.passed_at
        frame = Frame(
            FrameKind.NEXT, payload=text, resync=isinstance(source, Resync), passed_at=passed_at
        )
        self.executions += 1
        self.produced = True
        metrics.SHARED_EXECUTIONS.labels(self.root_field).inc()
        if source is not None and source is self._targeted:
            # Only for those that fell behind; a general RESYNC (below) reaches them too.
            audience: set[Member] | list[Member] = self._waiting_resync
            self._targeted = None
        else:
            audience = list(self.members)
        if isinstance(source, Resync):
            self._waiting_resync = set()
        for member in audience:
            member.offer(frame)

    def _end(self, frame: Frame) -> None:
        self._multiplexer.forget(self)
        for member in list(self.members):
            member.offer(frame)


@dataclass
class Multiplexer:
    """The groups of one process, by key. `enabled=False` (CASEWORK_MULTIPLEX_SUBSCRIPTIONS=0)
    runs every subscription on its own, as before; the bench compares the two."""

    enabled: bool = True
    groups: dict[Key, Group] = field(default_factory=dict)

    def join(
        self,
        key: Key,
        root_field: str,
        schema: BaseSchema,
        context: Context,
        operation_id: str,
        encode: Callable[[object], str | bytes],
    ) -> Member:
        group = self.groups.get(key)
        if group is None:
            shared = SharedContext(
                context.db,
                key.scope.principal(),
                Loaders(context.db),
                context.live,
                context.tokens,
                effect_allowed_hosts=context.effect_allowed_hosts,
            )
            shared.inboxes, shared.source = [], None
            group = self.groups[key] = Group(self, key, root_field, schema, shared, encode)
            metrics.SHARED_GROUPS.inc()
        return group.join(operation_id)

    async def leave(self, member: Member) -> None:
        group = member.group
        if group.leave(member) and self.groups.get(group.key) is group:
            self.forget(group)
            await group.close()

    def forget(self, group: Group) -> None:
        if self.groups.get(group.key) is group:
            del self.groups[group.key]
            metrics.SHARED_GROUPS.dec()
