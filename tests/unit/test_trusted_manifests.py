"""Manifests of trusted documents: both shapes load; each kind of bad manifest stops the
start with one line naming the file and the document, `casework serve` included; and the
built-in manifests are what the console and the clients send."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from graphql import OperationType

from server.graphql.documents import build
from server.graphql.documents.ids import document_id, hash_of
from server.graphql.documents.manifest import ManifestError, TrustedDocuments, load_manifests
from server.graphql.schema import CaseworkSchema, build_schema
from tests.api.live_server import free_port, run_casework

OWN = "query OwnQueues { queues { name } }"


@pytest.fixture(scope="module")
def schema() -> CaseworkSchema:
    return build_schema()


def written(tmp_path: Path, content: object, name: str = "own.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return path


def test_both_shapes_load_beside_the_built_in_documents(
    tmp_path: Path, schema: CaseworkSchema
) -> None:
    built_in = len(load_manifests([], schema))
    assert built_in > 50
    object_shape = written(tmp_path, {document_id(OWN): OWN}, "object.json")
    other = (
        "mutation Release($itemId: ID!, $leaseToken: String!) "
        "{ releaseLease(itemId: $itemId, leaseToken: $leaseToken) { __typename } }"
    )
    apollo = written(
        tmp_path,
        {
            "format": "apollo-persisted-query-manifest",
            "version": 1,
            "operations": [
                {
                    "id": hash_of(document_id(other)),
                    "name": "Release",
                    "type": "mutation",
                    "body": other,
                }
            ],
        },
        "apollo.json",
    )
    documents = load_manifests([object_shape, apollo], schema)
    assert len(documents) == built_in + 2
    own = documents.by_id(document_id(OWN))
    assert own is not None
    assert documents.by_text(OWN) is own
    assert own.operations == {"OwnQueues": OperationType.QUERY}
    release = documents.by_text(other)
    assert release is not None
    assert release.id == document_id(other)
    assert release.operations == {"Release": OperationType.MUTATION}


def one_line_refusal(paths: list[Path], schema: CaseworkSchema) -> str:
    with pytest.raises(ManifestError) as refused:
        load_manifests(paths, schema)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_wrong_hash_names_the_file_and_the_document(
    tmp_path: Path, schema: CaseworkSchema
) -> None:
    path = written(tmp_path, {"sha256:" + "ab" * 32: OWN})
    message = one_line_refusal([path], schema)
    assert message.startswith(f"{path}: OwnQueues (sha256:{'ab' * 32}): ")
    assert "not the SHA-256" in message
    assert document_id(OWN) in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("query Broken { queues { name }", "Syntax Error"),
        ("query Unknown { queues { nope } }", "Cannot query field 'nope'"),
        ("query Peek { __schema { types { name } } }", "introspection"),
        ("query Many { " + "me { user } " * 700 + "}", "Parsing aborted"),
        ("fragment F on Queue { name }", "Fragment 'F' is never used"),
    ],
    ids=["syntax", "unknown field", "introspection", "too many tokens", "no operation"],
)
def test_an_invalid_document_names_the_file_and_the_document(
    tmp_path: Path, schema: CaseworkSchema, text: str, problem: str
) -> None:
    path = written(tmp_path, {document_id(text): text})
    message = one_line_refusal([path], schema)
    assert message.startswith(f"{path}: "), message
    assert document_id(text) in message
    assert problem in message


def test_an_unreadable_or_malformed_file_is_named(tmp_path: Path, schema: CaseworkSchema) -> None:
    missing = tmp_path / "missing.json"
    assert (
        one_line_refusal([missing], schema)
        == f"{missing}: cannot be read: No such file or directory"
    )
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    assert one_line_refusal([not_json], schema).startswith(f"{not_json}: not a JSON manifest: ")
    a_list = written(tmp_path, [OWN], "list.json")
    assert one_line_refusal([a_list], schema).startswith(f"{a_list}: expected a JSON object")
    not_text = written(tmp_path, {document_id(OWN): 7}, "number.json")
    assert "is not a string" in one_line_refusal([not_text], schema)


async def test_casework_serve_stops_on_a_bad_manifest_with_one_line(tmp_path: Path) -> None:
    text = "query Unknown { queues { nope } }"
    path = written(tmp_path, {document_id(text): text})
    # An address nothing listens on: the manifest is checked before any database is used.
    env = {
        **os.environ,
        "DATABASE_URL": f"postgresql://nobody@127.0.0.1:{free_port()}/none",
        "CASEWORK_TRUSTED_DOCUMENTS": str(path),
    }
    run = await run_casework(env, "serve", "--port", str(free_port()))
    assert run.code == 2, run
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("casework: error:")]
    assert lines == [
        f"casework: error: trusted documents: {path}: Unknown ({document_id(text)}): "
        "Cannot query field 'nope' on type 'Queue'."
    ], run.stderr


def test_the_built_in_manifests_are_what_the_generator_makes() -> None:
    assert list(build.stale()) == [], "run: python -m server.graphql.documents.build"


def test_the_built_in_manifests_hold_every_document_sent(schema: CaseworkSchema) -> None:
    documents = load_manifests([], schema)
    sent = [
        *build.console_documents(),
        *build.python_client_documents(),
        *build.typescript_client_documents(),
    ]
    assert all(documents.by_text(text) is not None for text in sent)
    # Filled in: no template placeholder reached a document.
    assert not any("${" in text for text in sent)
    names = {name for document in documents for name in document.operations}
    assert {"ClaimNext", "SubmitDecision", "QueueBacklog", "EnqueueItems", "ItemDecision"} <= names


def test_the_extractor_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    source = tmp_path / "operations.js"
    source.write_text('export const A = `query A { x(s: "\\n") }`;\n')
    with pytest.raises(build.ExtractionError, match="backslash"):
        build.console_documents(source)
    source.write_text("export const B = `query B { ${LATER} }`;\nconst LATER = `x`;\n")
    with pytest.raises(build.ExtractionError, match=r"\$\{LATER\}"):
        build.console_documents(source)


def test_an_empty_set_of_documents_is_empty() -> None:
    assert len(TrustedDocuments()) == 0
