"""The gate of the lean path: every trusted document, with generated variables, answered
alike by both paths (the status, and the bytes of `data` and `errors`; wire.py).

Variables come from each operation's definitions and the schema (variables.py): valid ones,
biased towards the seeded state's names and ids so that some reach real rows, and invalid
ones of each class. Each is sent with a token of a role drawn alongside. A mutation's pair
runs on the same state: the database is restored before each of its two requests.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from graphql import GraphQLSchema
from hypothesis import given, settings
from hypothesis import strategies as st

from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import graphql_schema_of
from tests.lean.apps import Pair, bearer, graphql_body
from tests.lean.documents import Document, trusted_documents
from tests.lean.outcomes import COVERAGE, outcome
from tests.lean.snapshot import Snapshot
from tests.lean.state import ROLES, State
from tests.lean.variables import (
    VALID,
    Variables,
    invalid_classes,
    invalid_variables,
    valid_variables,
)

VALID_EXAMPLES = 6
EXAMPLES_PER_INVALID_CLASS = 2

DOCUMENTS = trusted_documents()


@functools.cache
def schema() -> GraphQLSchema:
    return graphql_schema_of(build_schema())


def examples(strategy: st.SearchStrategy[Variables], count: int) -> list[tuple[str, Variables]]:
    """`count` examples, drawn now (Hypothesis runs synchronously; they are sent later)."""
    drawn: list[tuple[str, Variables]] = []

    @settings(settings.get_profile("lean-differential"), max_examples=count)
    @given(st.sampled_from(ROLES), strategy)
    def collect(role: str, variables: Variables) -> None:
        drawn.append((role, variables))

    collect()
    return drawn


def _shown(variables: Variables) -> str:
    return "omitted" if variables.omitted else json.dumps(variables.values)[:400]


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
async def test_both_paths_answer_alike(
    document: Document, pair: Pair, world: State, snapshot: Snapshot
) -> None:
    operation, words = document.operation, world.vocabulary
    drawn = examples(valid_variables(operation, schema(), words), VALID_EXAMPLES)
    applicable = invalid_classes(operation, schema())
    for wanted in applicable:
        strategy = invalid_variables(operation, schema(), words, wanted)
        drawn += examples(strategy, EXAMPLES_PER_INVALID_CLASS)
    failures: list[str] = []
    classes: set[str] = set()
    for role, variables in drawn:
        values: Any = None if variables.omitted else variables.values
        body = graphql_body(document.text, values, operationName=document.operation_name)
        restore = snapshot.restore if document.is_mutation else None
        lean, found = await pair.compare(
            body, bearer(world.tokens[role]), mutation=document.is_mutation, restore=restore
        )
        classes.add(variables.kind)
        COVERAGE[(document.name, outcome(lean), variables.kind)] += 1
        if found:
            failures.append(
                f"{role}, {variables.kind}, variables {_shown(variables)}:\n" + "\n".join(found)
            )
    assert not failures, f"{len(failures)} of {len(drawn)} pairs differ:\n\n" + "\n\n".join(
        failures[:5]
    )
    assert classes == {VALID, *applicable}, f"classes never drawn: {classes ^ {VALID, *applicable}}"
