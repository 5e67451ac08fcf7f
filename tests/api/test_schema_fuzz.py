"""Schema-driven fuzzing: schemathesis reads schema.graphql and generates documents for every
root query and mutation (hypothesis-graphql underneath), valid ones and ones with wrong
argument types; each is sent with a token of each role to the real application on a real
PostgreSQL. Whatever a client sends, it is answered: never "Unexpected error." (INTERNAL), a
5xx, or an error or traceback in the log. The client's mistakes are refusals with a code.

Bounded and reproducible: a fixed number of documents per root field, derandomized (the
same documents on every run), generated once per process and sent for every role.
Hypothesis keeps what it caches (its Unicode tables) in pytest's cache directory, never in
the work tree.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import graphql
import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from schemathesis.graphql import nodes

from server.config import REPO_ROOT
from tests.api.conftest import Tokens

# Documents per root field and generation mode: 42 root fields make about 600 per role.
POSITIVE_EXAMPLES = 10
NEGATIVE_EXAMPLES = 4
MASKED_MESSAGE = "Unexpected error."
ROLES = ("admin", "integration", "reviewer", "approver", "manager")

# One worker runs every role: the documents are generated once per process.
pytestmark = pytest.mark.xdist_group("schema_fuzz")

# JSON values as GraphQL literals: any JSON, bare numbers, booleans and null included.
_NAMES = st.from_regex(r"[_A-Za-z][_0-9A-Za-z]{0,8}", fullmatch=True)
_JSON_LEAVES = st.one_of(
    st.just(graphql.NullValueNode()),
    st.booleans().map(nodes.Boolean),
    st.integers(min_value=-(2**53), max_value=2**53).map(nodes.Int),
    st.floats(allow_nan=False, allow_infinity=False).map(nodes.Float),
    st.text(max_size=20).map(nodes.String),
)


def _object(fields: dict[str, graphql.ValueNode]) -> graphql.ValueNode:
    return nodes.Object(
        [
            graphql.ObjectFieldNode(name=graphql.NameNode(value=name), value=value)
            for name, value in fields.items()
        ]
    )


JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(nodes.List),
        st.dictionaries(_NAMES, inner, max_size=3).map(_object),
    ),
    max_leaves=6,
)
schemathesis.graphql.scalar("JSON", JSON_VALUES)


@dataclass(frozen=True)
class Document:
    field: str
    body: str


def _generated(operation: Any, mode: GenerationMode, examples: int) -> list[str]:
    bodies: list[str] = []

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def collect(case: Any) -> None:
        bodies.append(case.body)

    collect()
    return bodies


@functools.cache
def documents(hypothesis_home: Path) -> tuple[Document, ...]:
    """Every generated document, in a fixed order; the same in every process and run."""
    set_hypothesis_home_dir(hypothesis_home)
    schema = schemathesis.graphql.from_path(REPO_ROOT / "schema.graphql")
    found: list[Document] = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        for mode, examples in (
            (GenerationMode.POSITIVE, POSITIVE_EXAMPLES),
            (GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES),
        ):
            bodies = _generated(operation, mode, examples)
            found += [Document(operation.label, body) for body in dict.fromkeys(bodies)]
    return tuple(found)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logged_errors() -> Iterator[list[logging.LogRecord]]:
    """Every record logged at ERROR or above, by any logger, while the test runs."""
    handler = _Records()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)


def problems_of(response: httpx.Response) -> list[str]:
    if response.status_code >= 500:
        return [f"HTTP {response.status_code}: {response.text[:300]}"]
    try:
        body = response.json()
    except ValueError:
        return [f"HTTP {response.status_code}, not JSON: {response.text[:300]}"]
    found = []
    for error in body.get("errors") or ():
        code = (error.get("extensions") or {}).get("code")
        if error.get("message") == MASKED_MESSAGE or code in (None, "INTERNAL"):
            found.append(f"error {json.dumps(error)[:300]}")
    return found


@pytest.fixture
def hypothesis_home(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Where Hypothesis keeps its files: pytest's cache directory (kept between runs, so
    its Unicode tables are built once), or a temporary one without the cache plugin."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        return tmp_path_factory.mktemp("hypothesis")
    home: Path = cache.mkdir("hypothesis")
    return home


@pytest.mark.parametrize("role", ROLES)
async def test_no_generated_document_is_answered_as_the_servers_fault(
    role: str,
    client: httpx.AsyncClient,
    tokens: Tokens,
    kyc: str,
    logged_errors: list[logging.LogRecord],
    hypothesis_home: Path,
) -> None:
    generated = documents(hypothesis_home)
    assert len({document.field for document in generated}) >= 40
    headers = {"Authorization": f"Bearer {getattr(tokens, role)}"}
    failures: list[str] = []
    for document in generated:
        before = len(logged_errors)
        try:
            response = await client.post("/graphql", json={"query": document.body}, headers=headers)
        except Exception as error:
            failures.append(f"{document.field}: raised {error!r}\n{document.body}")
            continue
        found = problems_of(response)
        found += [
            f"logged {record.levelname} {record.name}: {record.getMessage()[:200]}"
            + (f" ({record.exc_info[1]!r})" if record.exc_info else "")
            for record in logged_errors[before:]
        ]
        if found:
            failures.append(f"{document.field}: " + "; ".join(found) + f"\n{document.body}")
    assert not failures, f"{len(failures)} of {len(generated)} documents:\n\n" + "\n\n".join(
        failures[:10]
    )
