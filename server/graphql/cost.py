"""What a document may cost, in rows, decided during validation.

A field with a `first` argument (a connection) returns up to `first` rows for each row
above it; a list of objects without one (an item's `decisions`, an exception's `events`)
returns an unbounded few, weighed LIST_WEIGHT. A field costs the product of those counts
along its path; a document costs the sum over every field, aliases and fragments included,
so `queue { items(first: 200) { edges { node { decisions { id } } } } }` costs
200 + 200 * 10 = 2,200, and 30 aliases of it 66,000. A scalar that stands for many rows
(HEAVY_SCALARS: an item's audit pack) counts those rows for each instance of its parent.

Validation runs before the variables are known and its result is cached per document, so a
`first` given by a variable counts as its maximum, MAX_PAGE: a client that wants a smaller
bound writes the number into the document.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLObjectType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    VariableNode,
    get_named_type,
    get_nullable_type,
)

from server.graphql.codes import ErrorCode, with_code
from server.graphql.pagination import MAX_PAGE

MAX_COST = 10_000
# The rows an unpaginated list of objects stands for: a handful in practice, never bounded.
LIST_WEIGHT = 10
# Beyond the depth limit (MAX_DEPTH in operation.py refuses such documents anyway); bounds the
# walk below, which follows fragments, so a cyclic or absurd document cannot make it loop.
MAX_WALK_DEPTH = 50
# A connection's rows are counted on the connection field; its `edges` list is those rows.
EDGES = "edges"
# Scalars that stand for many rows. An item's audit pack (ReviewItem.auditPack) is its whole
# story in one value: every timeline entry, decision, attempt and exception, a hundred rows
# for a busy item. Weighed as such, a page of 200 items with their packs is refused (and 50
# are served), where as a plain scalar it would have cost 200.
HEAVY_SCALARS = {("ReviewItem", "auditPack"): 100}


def _rows(field: GraphQLField, node: FieldNode) -> int | None:
    """How many rows the field returns per row of its parent; None if it returns no rows of
    its own (a scalar, a single object, or a connection's `edges`)."""
    if "first" in field.args:
        for argument in node.arguments or ():
            if argument.name.value == "first":
                value = argument.value
                if isinstance(value, IntValueNode):
                    # Beyond MAX_PAGE the field refuses the value itself, with a clearer message.
                    return min(max(int(value.value), 0), MAX_PAGE)
                if isinstance(value, VariableNode):
                    return MAX_PAGE
        default = field.args["first"].default_value
        return default if isinstance(default, int) else MAX_PAGE
    nullable = get_nullable_type(field.type)
    if (
        isinstance(nullable, GraphQLList)
        and isinstance(get_named_type(nullable), GraphQLObjectType | GraphQLInterfaceType)
        and node.name.value != EDGES
    ):
        return LIST_WEIGHT
    return None


class CostLimit(ValidationRule):
    """Refuses an operation whose cost (see the module) exceeds MAX_COST."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        # A fragment's cost per row of the field it is spread in: the cost is linear in the
        # rows above, so each fragment is walked once however often it is spread.
        self._fragment_costs: dict[str, int] = {}

    def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
        root = self.context.schema.get_root_type(node.operation)
        if root is None:
            return
        cost = self._cost(node.selection_set, root, 0, frozenset())
        if cost > MAX_COST:
            name = f"'{node.name.value}'" if node.name else "This operation"
            self.report_error(
                with_code(
                    GraphQLError(
                        f"{name} costs {cost} rows; the limit is {MAX_COST}. Ask for fewer "
                        "rows (a smaller `first`, fewer aliases) or split the request.",
                        node,
                    ),
                    ErrorCode.LIMIT_EXCEEDED,
                )
            )

    def _cost(
        self,
        selections: SelectionSetNode | None,
        parent: GraphQLNamedType,
        depth: int,
        entered: frozenset[str],
    ) -> int:
        """The rows one instance of `parent` costs with these selections."""
        if selections is None or depth > MAX_WALK_DEPTH:
            return 0
        total = 0
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                fields = getattr(parent, "fields", None)
                field = fields.get(selection.name.value) if fields else None
                if field is None:
                    # __typename, or a field that other rules refuse.
                    continue
                below = self._cost(
                    selection.selection_set, get_named_type(field.type), depth + 1, entered
                )
                rows = _rows(field, selection)
                total += below if rows is None else rows + rows * below
                total += HEAVY_SCALARS.get((parent.name, selection.name.value), 0)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                target = self.context.schema.get_type(condition.name.value) if condition else parent
                if target is not None:
                    total += self._cost(selection.selection_set, target, depth + 1, entered)
            elif isinstance(selection, FragmentSpreadNode):
                total += self._fragment_cost(selection.name.value, depth, entered)
        return total

    def _fragment_cost(self, name: str, depth: int, entered: frozenset[str]) -> int:
        if name in self._fragment_costs:
            return self._fragment_costs[name]
        fragment = self.context.get_fragment(name)
        if fragment is None or name in entered:
            # Unknown or cyclic: NoFragmentCyclesRule and KnownFragmentNamesRule refuse it.
            return 0
        target = self.context.schema.get_type(fragment.type_condition.name.value)
        cost = (
            0
            if target is None
            else self._cost(fragment.selection_set, target, depth + 1, entered | {name})
        )
        self._fragment_costs[name] = cost
        return cost
