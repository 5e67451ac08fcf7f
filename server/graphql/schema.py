"""The schema, with its guards. Extensions are passed as factories: one per request."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, cast

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext

from server.graphql.bulk import BulkMutation
from server.graphql.codes import RETRY_AFTER_SECONDS, ClientError, ErrorCode
from server.graphql.controls import ControlMutation
from server.graphql.cost import CostLimit
from server.graphql.error_coding import code_errors
from server.graphql.errors import Error
from server.graphql.exceptions.mutations import ExceptionMutation
from server.graphql.exceptions.queries import ExceptionQuery
from server.graphql.exceptions.subscriptions import ExceptionSubscription
from server.graphql.guards import BoundedParserCache, cached_validation, limit_coded
from server.graphql.input_strings import guard_root_fields
from server.graphql.lean_resolvers import lean_resolvers
from server.graphql.leaves import LeafExecutionContext
from server.graphql.mutations import Mutation
from server.graphql.observe import ObserveOperation, note_failure, note_refusal
from server.graphql.queries import Query
from server.graphql.subscriptions import Subscription
from server.observability import tracing

MAX_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 2000

log = logging.getLogger("casework.graphql")

UNAVAILABLE_MESSAGE = f"The database is unavailable; try again in {RETRY_AFTER_SECONDS} seconds."


def is_unexpected(error: GraphQLError) -> bool:
    """The server's fault, as opposed to the client's (bad syntax, values, ids)."""
    original = error.original_error
    return original is not None and not isinstance(original, ClientError | GraphQLError)


class CaseworkSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # Runs before MaskErrors rewrites the errors, on every path: the operator sees
        # everything, and each error gets its code here (server/graphql/error_coding.py).
        # A client's mistake is said once, in the operation's access line (observe.py).
        for error, code in zip(errors, code_errors(errors, execution_context), strict=True):
            if code is ErrorCode.UNAVAILABLE:
                # An outage fails every request alike: a traceback each would drown the log.
                note_failure()
                log.warning("database unavailable at %s: %r", error.path, error.original_error)
            elif is_unexpected(error):
                note_failure()
                log.error("unexpected error at %s", error.path, exc_info=error.original_error)
            else:
                note_refusal(error.message)


class MaskUnexpectedErrors(MaskErrors):
    """MaskErrors that keeps `extensions` (the code): a client still learns what it can do.

    CaseworkSchema.process_errors has set the code by the time this masks
    (server/graphql/error_coding.py says why there).
    """

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        unavailable = (error.extensions or {}).get("code") == ErrorCode.UNAVAILABLE.value
        return GraphQLError(
            message=UNAVAILABLE_MESSAGE if unavailable else self.error_message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            original_error=None,
            extensions=error.extensions,
        )


def _with_shared_rules(
    extension: type[AddValidationRules], **options: int
) -> Callable[[], SchemaExtension]:
    """A factory of fresh extension instances that all share one set of rule classes.

    The limiters build new rule classes in every constructor, and validation is cached on
    the rule classes among other things: a per-request class would never hit the cache.
    Their refusals are coded LIMIT_EXCEEDED (guards.limit_coded).
    """
    rules = [
        limit_coded(rule)
        for rule in cast(Callable[..., AddValidationRules], extension)(**options).validation_rules
    ]

    def build() -> SchemaExtension:
        fresh = extension.__new__(extension)
        AddValidationRules.__init__(fresh, rules)
        return fresh

    return build


class PerEventExecutionContext(LeafExecutionContext):
    """graphql-core 3.3 copies the executor for every subscription event, and the copies
    share a memo keyed on lists made afresh each event: every event sent would leave an
    entry behind for as long as its subscription lives (about 1.5 kB per event measured by
    bench/fanout_bench.py). Each copy gets a memo of its own."""

    def build_per_event_executor(self, payload: Any) -> PerEventExecutionContext:
        executor = cast(PerEventExecutionContext, super().build_per_event_executor(payload))
        executor._relevant_sub_fields = {}
        return executor


class QuietExecutionContext(PerEventExecutionContext):
    """Outside --dev, errors in variables do not suggest names of the schema either."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> Any:
        return super().build(*args, **{**kwargs, "hide_suggestions": True})


# Resolver arguments a span may carry: names, never lease tokens, secrets or payloads.
TRACED_ARGUMENTS = frozenset({"queue", "workflow", "first", "after", "last", "before"})


def _tracing_extension() -> Callable[[], SchemaExtension]:
    """Strawberry's OpenTelemetry extension: a span per operation and per resolver, on
    the provider tracing.py set up (installed with casework[otel])."""
    from strawberry.extensions.tracing import OpenTelemetryExtension

    def traced_arguments(arguments: dict[str, Any], info: Any) -> dict[str, Any]:
        return {name: value for name, value in arguments.items() if name in TRACED_ARGUMENTS}

    return functools.partial(
        OpenTelemetryExtension,
        arg_filter=traced_arguments,
        tracer_provider=tracing.provider(),
    )


def build_schema(*, dev: bool = False) -> CaseworkSchema:
    extensions: list[Callable[[], SchemaExtension]] = [
        # Bounded caches: distinct query texts cannot grow memory without limit. The parser
        # refuses a document over MAX_DOCUMENT_CHARS before lexing it (guards.py).
        BoundedParserCache,
        _with_shared_rules(QueryDepthLimiter, max_depth=MAX_DEPTH),
        _with_shared_rules(MaxAliasesLimiter, max_alias_count=MAX_ALIASES),
        functools.partial(MaxTokensLimiter, max_token_count=MAX_TOKENS),
        functools.partial(AddValidationRules, [CostLimit]),
        # Names of the schema a client did not ask for are shown in --dev only.
        cached_validation(hide_suggestions=not dev),
        functools.partial(MaskUnexpectedErrors, should_mask_error=is_unexpected),
    ]
    if not dev:
        extensions.append(DisableIntrospection)
    extensions.append(ObserveOperation)
    if tracing.enabled():
        extensions.append(_tracing_extension())
    schema = CaseworkSchema(
        query=merge_types("Query", (Query, ExceptionQuery)),
        mutation=merge_types(
            "Mutation", (Mutation, ControlMutation, BulkMutation, ExceptionMutation)
        ),
        subscription=merge_types("Subscription", (Subscription, ExceptionSubscription)),
        types=[Error],
        extensions=extensions,
        execution_context_class=PerEventExecutionContext if dev else QuietExecutionContext,
    )
    # Methods without arguments called directly (lean_resolvers.py), then unstorable or
    # over-long strings in any root field's arguments refused (input_strings.py).
    lean_resolvers(schema)
    guard_root_fields(schema._schema)
    return schema
