"""Guards on the document itself, before anything resolves: its length, the limiters'
refusals coded LIMIT_EXCEEDED, and validation without schema suggestions outside --dev."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, cast

from graphql import (
    ASTValidationRule,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    ValidationContext,
    validate,
)
from strawberry.extensions import ParserCache, SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

from server.graphql.codes import ErrorCode, with_code

# Characters (code points) of a query document. Documents are small (MAX_TOKENS in
# schema.py allows 2,000 tokens); values belong in variables. graphql-core refuses a longer
# source before lexing it, so a huge text costs neither parse time nor cache memory.
MAX_DOCUMENT_CHARS = 50_000
# graphql-core ends the message of every limit it enforces while parsing (source length,
# tokens, comments, nesting) with these words, and has no error class of its own for them.
_PARSER_LIMIT = "Parsing aborted."
# As Strawberry's ValidationCache: distinct documents cannot grow memory without limit.
VALIDATION_CACHE_SIZE = 128


class BoundedParserCache(ParserCache):
    """Strawberry's ParserCache, with graphql-core's own source-length limit.

    The cache is functools.lru_cache around `parse`, which keeps a text only once it has
    parsed: a refused text is never kept.
    """

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        # graphql-core 3.3 has the option; Strawberry's typing of parse options does not yet.
        cast(dict[str, Any], context.parse_options)["max_source_length"] = MAX_DOCUMENT_CHARS
        try:
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        except GraphQLSyntaxError as error:
            if error.message.endswith(_PARSER_LIMIT):
                with_code(error, ErrorCode.LIMIT_EXCEEDED)
            raise
        yield


def limit_coded(rule: type[ASTValidationRule]) -> type[ASTValidationRule]:
    """The rule, with every error it reports coded LIMIT_EXCEEDED.

    Strawberry's QueryDepthLimiter and MaxAliasesLimiter judge the whole document in their
    rule's constructor and report through the validation context, not through the rule's
    own `report_error`; so the context's error callback is wrapped for that constructor.
    """

    class Coded(rule):  # type: ignore[valid-type,misc]
        def __init__(self, context: ValidationContext) -> None:
            report = context.on_error

            def coded(error: GraphQLError) -> None:
                report(with_code(error, ErrorCode.LIMIT_EXCEEDED))

            context.on_error = coded  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                context.on_error = report  # type: ignore[method-assign]

        def report_error(self, error: GraphQLError) -> None:
            super().report_error(with_code(error, ErrorCode.LIMIT_EXCEEDED))

    Coded.__name__ = Coded.__qualname__ = f"LimitCoded{rule.__name__}"
    return Coded


@functools.lru_cache(maxsize=VALIDATION_CACHE_SIZE)
def _validate(
    schema: GraphQLSchema,
    document: DocumentNode,
    rules: tuple[type[ASTValidationRule], ...],
    hide_suggestions: bool,
) -> list[GraphQLError]:
    # The two rules Strawberry's own validate_document adds to every validation.
    return validate(
        schema,
        document,
        (*rules, MaybeNullValidationRule, OneOfInputValidationRule),
        hide_suggestions=hide_suggestions,
    )


class CachedValidation(SchemaExtension):
    """Strawberry's ValidationCache, with graphql-core's `hide_suggestions`: outside --dev a
    client is not told the names of fields, arguments and types it did not ask for."""

    def __init__(self, *, hide_suggestions: bool) -> None:
        self.hide_suggestions = hide_suggestions

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        context.pre_execution_errors = _validate(
            context.schema._schema,
            context.graphql_document,
            context.validation_rules,
            self.hide_suggestions,
        )
        yield


def cached_validation(*, hide_suggestions: bool) -> Callable[[], SchemaExtension]:
    return functools.partial(CachedValidation, hide_suggestions=hide_suggestions)


def quiet_build(build: Callable[..., Any]) -> Callable[..., Any]:
    """An executor's `build` that hides suggestions in variable coercion errors too."""

    def quiet(*args: Any, **kwargs: Any) -> Any:
        kwargs["hide_suggestions"] = True
        return build(*args, **kwargs)

    return quiet
