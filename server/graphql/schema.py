"""The schema, with its guards. Its extension is passed as a factory: one per request."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, cast

import strawberry
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext

from server.graphql import argument_conversion
from server.graphql.codes import ErrorCode
from server.graphql.controls.bulk import BulkMutation
from server.graphql.controls.mutations import ControlMutation
from server.graphql.error_coding import code_errors
from server.graphql.errors import Error
from server.graphql.exceptions.mutations import ExceptionMutation
from server.graphql.exceptions.queries import ExceptionQuery
from server.graphql.exceptions.subscriptions import ExceptionSubscription
from server.graphql.identity.mutations import IdentityMutation
from server.graphql.input_strings import guard_root_fields
from server.graphql.integrations.mutations import IntegrationMutation
from server.graphql.integrations.notifications import NotificationMutation, NotificationQuery
from server.graphql.integrations.queries import IntegrationQuery
from server.graphql.lean_resolvers import lean_resolvers
from server.graphql.leaves import LeafExecutionContext
from server.graphql.observe import note_failure, note_refusal
from server.graphql.operation import is_unexpected, operation_extension
from server.graphql.privacy.erasure import ErasureMutation
from server.graphql.privacy.policy import PrivacyPolicyMutation, PrivacyPolicyQuery
from server.graphql.privacy.reveal import RevealMutation
from server.graphql.quality.mutations import QualityMutation
from server.graphql.review.mutations import Mutation
from server.graphql.review.queries import Query
from server.graphql.review.subscriptions import Subscription
from server.graphql.search.queries import SearchQuery
from server.graphql.strawberry_internals import graphql_schema_of
from server.graphql.timeline.mutations import TimelineMutation
from server.observability import tracing

log = logging.getLogger("casework.graphql")


class CaseworkSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        report_errors(errors, None if execution_context is None else execution_context.context)


def report_errors(errors: list[GraphQLError], context: object) -> None:
    """Codes and reports an operation's errors, on every path (Strawberry's, through
    process_errors, and the lean path's, server/lean_graphql.py); `context` is the
    operation's context value.

    Runs before MaskErrors rewrites the errors: the operator sees everything, and each
    error gets its code here (server/graphql/error_coding.py). A client's mistake is said
    once, in the operation's access line (observe.py)."""
    for error, code in zip(errors, code_errors(errors, context), strict=True):
        if code is ErrorCode.UNAVAILABLE:
            # An outage fails every request alike: a traceback each would drown the log.
            note_failure()
            log.warning("database unavailable at %s: %r", error.path, error.original_error)
        elif is_unexpected(error):
            note_failure()
            log.error("unexpected error at %s", error.path, exc_info=error.original_error)
        else:
            note_refusal(error.message)


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
    # Guards, masking and observation, in one extension (operation.py says why one).
    extensions: list[Callable[[], SchemaExtension]] = [operation_extension(dev=dev)]
    if tracing.enabled():
        extensions.append(_tracing_extension())
    schema = CaseworkSchema(
        query=merge_types(
            "Query",
            (
                Query,
                ExceptionQuery,
                PrivacyPolicyQuery,
                IntegrationQuery,
                NotificationQuery,
                SearchQuery,
            ),
        ),
        mutation=merge_types(
            "Mutation",
            (
                Mutation,
                QualityMutation,
                TimelineMutation,
                ControlMutation,
                BulkMutation,
                ExceptionMutation,
                IdentityMutation,
                PrivacyPolicyMutation,
                ErasureMutation,
                RevealMutation,
                IntegrationMutation,
                NotificationMutation,
            ),
        ),
        subscription=merge_types("Subscription", (Subscription, ExceptionSubscription)),
        types=[Error],
        extensions=extensions,
        execution_context_class=PerEventExecutionContext if dev else QuietExecutionContext,
    )
    # Methods without arguments called directly (lean_resolvers.py), then unstorable or
    # over-long strings in any root field's arguments refused (input_strings.py).
    lean_resolvers(schema)
    # Arguments converted by a plan made once per field (argument_conversion.py).
    argument_conversion.install()
    guard_root_fields(graphql_schema_of(schema))
    return schema
