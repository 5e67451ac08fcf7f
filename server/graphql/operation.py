"""The one schema extension Casework runs around every operation.

Strawberry makes a fresh instance of each extension per operation and enters four hooks
of each (operation, parse, validate, execute), looking every hook up by name. With the
guards, the masking and the observation as nine separate extensions that bookkeeping was
about a tenth of a request's CPU (bench/request_cost.py). Here they are one extension:
the same checks, in the same order, with one instance and one set of hooks.

What it does, hook by hook:
- operation: sets the parser's limits (document length, tokens) and adds the validation
  rules (depth, aliases, cost, introspection outside --dev); once the operation has run,
  masks unexpected errors (keeping their codes) and ends a subscription's count.
- parse: parses through a bounded cache; a parser limit is coded LIMIT_EXCEEDED.
- validate: validates through a bounded cache, without schema suggestions outside --dev.
- execute: notes the operation's type and root fields for its access line; with a read
  replica, keeps every read of a mutation or a subscription on the primary.
- results: `extensions.replica` when some of the data came from the read replica.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, cast

from graphql import ASTValidationRule, GraphQLError, GraphQLSyntaxError, parse
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import MaskErrors, MaxAliasesLimiter, QueryDepthLimiter
from strawberry.types.graphql import OperationType

from server.graphql import guards, observe
from server.graphql.codes import RETRY_AFTER_SECONDS, ClientError, ErrorCode, with_code
from server.graphql.cost import CostLimit
from server.graphql.strawberry_internals import PRE_EXECUTION_REFUSALS, graphql_schema_of

MAX_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 2000
# Distinct documents kept parsed: the console's and integrations' operations are a fixed
# set, and a bound keeps unique texts from growing memory.
PARSE_CACHE_SIZE = 256

UNAVAILABLE_MESSAGE = f"The database is unavailable; try again in {RETRY_AFTER_SECONDS} seconds."


SUBSCRIPTION_OVER_HTTP = (
    "A subscription is served over the websocket at /graphql (graphql-transport-ws), not over HTTP."
)


def _subscription_over_http(context: Any) -> bool:
    """A subscription sent by HTTP: only an HTTP request's context carries a sub-response
    (a socket's, or the one a multiplexed subscription shares, has none)."""
    if getattr(context.context, "response", None) is None:
        return False
    try:
        return bool(context.operation_type is OperationType.SUBSCRIPTION)
    except RuntimeError:
        # No operation of that name: graphql-core says so when it executes.
        return False


def is_unexpected(error: GraphQLError) -> bool:
    """The server's fault, as opposed to the client's (bad syntax, values, ids)."""
    original = error.original_error
    return original is not None and not isinstance(
        original, (ClientError, GraphQLError, *PRE_EXECUTION_REFUSALS)
    )


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse(query: str, **options: Any) -> Any:
    # lru_cache keeps a text only once it has parsed: a refused text is never kept.
    document = parse(query, **options)
    guards.refuse_empty_selections(document)
    return document


def validation_rules(*, dev: bool) -> tuple[type[ASTValidationRule], ...]:
    """The rules added to graphql-core's, built once so the validation cache can hit.

    Strawberry's limiters build new rule classes in their constructors, and validation is
    cached on the rule classes among other things: classes made per request would never
    hit. Their refusals are coded LIMIT_EXCEEDED (guards.limit_coded).
    """
    limiters = (
        QueryDepthLimiter(max_depth=MAX_DEPTH),
        MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
    )
    rules = [guards.limit_coded(rule) for limiter in limiters for rule in limiter.validation_rules]
    rules.append(CostLimit)
    if not dev:
        rules.append(NoSchemaIntrospectionCustomRule)
    return tuple(rules)


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

    def masked(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        """The errors as the client sees them (the lean path masks with this too)."""
        return self._process_errors(errors)

    def _process_result(self, result: object) -> None:
        # Strawberry's checks for errors with isinstance against a runtime Protocol, which
        # walks the Protocol's attributes on every operation; the attribute is all it needs.
        errors = getattr(result, "errors", None)
        if errors:
            result.errors = self.masked(errors)  # type: ignore[attr-defined]


class CaseworkOperation(MaskUnexpectedErrors):
    """Everything around one operation; see the module's docstring."""

    def __init__(self, rules: tuple[type[ASTValidationRule], ...], *, dev: bool) -> None:
        super().__init__(should_mask_error=is_unexpected)
        self._rules = rules
        self._hide_suggestions = not dev

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        # graphql-core 3.3 has both options; Strawberry's typing of parse options lags.
        options = cast(dict[str, Any], context.parse_options)
        options["max_source_length"] = guards.MAX_DOCUMENT_CHARS
        options["max_tokens"] = MAX_TOKENS
        context.validation_rules = context.validation_rules + self._rules
        try:
            yield from super().on_operation()
        finally:
            # A subscription's operation ends with its stream.
            observe.end_subscription()

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        try:
            context.graphql_document = _parse(context.query, **context.parse_options)
        except GraphQLSyntaxError as error:
            if guards.is_parser_limit(error):
                with_code(error, ErrorCode.LIMIT_EXCEEDED)
            raise
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        context.pre_execution_errors = guards.validate_cached(
            graphql_schema_of(context.schema),
            context.query,
            context.graphql_document,
            context.validation_rules,
            self._hide_suggestions,
        )
        if not context.pre_execution_errors and _subscription_over_http(context):
            # Strawberry would run it as a query and fail on its stream: the server's
            # fault by the look of it, though the client asked for the wrong transport.
            context.pre_execution_errors = [
                with_code(GraphQLError(SUBSCRIPTION_OVER_HTTP), ErrorCode.BAD_REQUEST)
            ]
        yield

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is not None:
            observe.begin_operation(context.query, context.graphql_document, context.operation_name)
            keep_on_primary(context.context, context.operation_type)
        yield

    def get_results(self) -> dict[str, Any]:
        return result_extensions(self.execution_context.context)


def result_extensions(context: object) -> dict[str, Any]:
    """`extensions.replica.maxLagSeconds`: some of `data` came from the read replica and
    may be this many seconds old (docs/operations.md, "Read replicas")."""
    reads = getattr(context, "reads", None)
    found = None if reads is None else reads.extension()
    return {} if found is None else {"replica": found}


def keep_on_primary(context: object, operation_type: object) -> None:
    """With a read replica, every read of a mutation or a subscription stays on the
    primary: a mutation's answer shows its own write; a subscription's events follow
    hints of writes the replica may not have yet (server/store/routing.py)."""
    reads = getattr(context, "reads", None)
    if reads is not None and operation_type is not OperationType.QUERY:
        reads.primary_only = True


def operation_extension(*, dev: bool) -> Callable[[], CaseworkOperation]:
    """The factory the schema calls once per operation."""
    return functools.partial(CaseworkOperation, validation_rules(dev=dev), dev=dev)
