"""Guards on the document itself, before anything resolves: its length, the limiters'
refusals coded LIMIT_EXCEEDED, and validation without schema suggestions outside --dev.
server/graphql/operation.py runs them for every operation."""

from __future__ import annotations

from collections import OrderedDict

from graphql import (
    ASTValidationRule,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    ValidationContext,
    validate,
)
from graphql.language import Node
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

from server.graphql.codes import ErrorCode, with_code

# Characters (code points) of a query document. Documents are small (MAX_TOKENS in
# operation.py allows 2,000 tokens); values belong in variables. graphql-core refuses a longer
# source before lexing it, so a huge text costs neither parse time nor cache memory.
MAX_DOCUMENT_CHARS = 50_000
# graphql-core ends the message of every limit it enforces while parsing (source length,
# tokens, comments, nesting) with these words, and has no error class of its own for them.
_PARSER_LIMIT = "Parsing aborted."
# As Strawberry's ValidationCache: distinct documents cannot grow memory without limit.
VALIDATION_CACHE_SIZE = 128


def is_parser_limit(error: GraphQLSyntaxError) -> bool:
    """A document refused for its size (length, tokens, nesting), not for its syntax."""
    return error.message.endswith(_PARSER_LIMIT)


EMPTY_SELECTION = "Expected Name, found '}'."


def refuse_empty_selections(document: DocumentNode) -> None:
    """Raises the syntax error graphql-core 3.2 raised for `{}`: the grammar wants at least
    one selection in a set, and 3.3's parser lets an empty one through, on which
    Strawberry's depth limiter fails with an unexpected error."""
    stack: list[Node] = list(document.definitions)
    while stack:
        node = stack.pop()
        selection_set = getattr(node, "selection_set", None)
        if selection_set is None:
            continue
        if not selection_set.selections:
            if document.loc is None or selection_set.loc is None:
                raise GraphQLError(f"Syntax Error: {EMPTY_SELECTION}")
            raise GraphQLSyntaxError(
                document.loc.source, selection_set.loc.end - 1, EMPTY_SELECTION
            )
        stack.extend(selection_set.selections)


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


# Keyed by the document's text: an AST node is a frozen dataclass whose hash walks the
# whole tree on every lookup, while a string's hash is computed once. The document is the
# text's own parse (the parser's cache hands back the same one for the same text).
_ValidationKey = tuple[GraphQLSchema, str, tuple[type[ASTValidationRule], ...], bool]
_validated: OrderedDict[_ValidationKey, list[GraphQLError]] = OrderedDict()


def validate_cached(
    schema: GraphQLSchema,
    query: str | None,
    document: DocumentNode,
    rules: tuple[type[ASTValidationRule], ...],
    hide_suggestions: bool,
) -> list[GraphQLError]:
    """Validation errors of a document, cached by its text; bounded like the parser's."""
    if query is None:
        return _validate(schema, document, rules, hide_suggestions)
    key = (schema, query, rules, hide_suggestions)
    errors = _validated.get(key)
    if errors is None:
        errors = _validated[key] = _validate(schema, document, rules, hide_suggestions)
        if len(_validated) > VALIDATION_CACHE_SIZE:
            _validated.popitem(last=False)
    else:
        _validated.move_to_end(key)
    return errors
