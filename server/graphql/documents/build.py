"""Writes the built-in manifests from the documents the console and the clients send.

    python -m server.graphql.documents.build          # rewrite manifests/*.json
    python -m server.graphql.documents.build --check  # exit 1 if they are stale (tests do this too)

Each manifest holds the exact text that goes on the wire, since a document's id is the hash
of those bytes:
- console.json: every exported document of the console's operations.js, its `${NAME}`
  interpolations filled in as the browser fills them;
- python-client.json: each `gql(...)` text of the Python client's generated code;
- typescript-client.json: each `...Document` of the TypeScript client's generated
  `gql/graphql.ts` (GraphQL Code Generator's client preset in string mode: `toString()` of a
  TypedDocumentString is its literal, which the client posts as it is).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from server.graphql.documents.ids import document_id
from server.graphql.documents.manifest import BUILT_IN

REPO_ROOT = Path(__file__).resolve().parents[3]
CONSOLE_OPERATIONS = REPO_ROOT / "server" / "console" / "static" / "js" / "operations.js"
PYTHON_CLIENT = REPO_ROOT / "clients" / "python" / "casework_client" / "generated" / "client.py"
TYPESCRIPT_DOCUMENTS = REPO_ROOT / "clients" / "typescript" / "src" / "gql" / "graphql.ts"

# `const NAME = \`` (exported or not), and the TypeScript client's typed document strings.
_JS_CONSTANT = re.compile(r"^(export\s+)?const\s+([A-Z][A-Z0-9_]*)\s*=\s*`", re.MULTILINE)
_TS_DOCUMENT = re.compile(r"^export const (\w+Document) = new TypedDocumentString\(`", re.MULTILINE)
_INTERPOLATION = re.compile(r"\$\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")
_OPERATION = re.compile(r"^\s*(query|mutation|subscription)\b|^\s*\{")


class ExtractionError(ValueError):
    """A source the extractor cannot evaluate without running JavaScript."""


def _template_literal(source: str, start: int, where: str) -> tuple[str, int]:
    """The raw text of the template literal opened just before `start`, and its end."""
    end = source.find("`", start)
    if end < 0:
        raise ExtractionError(f"{where}: an unterminated template literal")
    # JavaScript reads a line break in a template literal as "\n" whatever the file has.
    raw = source[start:end].replace("\r\n", "\n").replace("\r", "\n")
    if "\\" in raw:
        # An escape would be read differently by JavaScript: refuse rather than guess.
        raise ExtractionError(f"{where}: a template literal with a backslash escape")
    return raw, end


def _filled(raw: str, known: dict[str, str], where: str) -> str:
    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise ExtractionError(f"{where}: ${{{name}}} is not a constant defined above it")
        return known[name]

    text = _INTERPOLATION.sub(value_of, raw)
    if "${" in text:
        raise ExtractionError(f"{where}: an interpolation that is not a constant's name")
    return text


def console_documents(path: Path = CONSOLE_OPERATIONS) -> list[str]:
    """The exported documents of operations.js, in the order the module defines them."""
    source = path.read_text(encoding="utf-8")
    known: dict[str, str] = {}
    documents: list[str] = []
    for match in _JS_CONSTANT.finditer(source):
        name = match.group(2)
        raw, _ = _template_literal(source, match.end(), f"{path.name}: {name}")
        known[name] = _filled(raw, known, f"{path.name}: {name}")
        if match.group(1) and _OPERATION.match(known[name]):
            documents.append(known[name])
    return documents


def python_client_documents(path: Path = PYTHON_CLIENT) -> list[str]:
    """The literal of every `gql("...")` call in the generated client, in source order."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "gql"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return [text for _, text in sorted(found)]


def typescript_client_documents(path: Path = TYPESCRIPT_DOCUMENTS) -> list[str]:
    source = path.read_text(encoding="utf-8")
    documents = []
    for match in _TS_DOCUMENT.finditer(source):
        raw, _ = _template_literal(source, match.end(), f"{path.name}: {match.group(1)}")
        documents.append(_filled(raw, {}, f"{path.name}: {match.group(1)}"))
    return documents


def manifest_of(texts: Iterable[str]) -> dict[str, str]:
    """The object shape: each document's id to its text (a text listed twice, once)."""
    return {document_id(text): text for text in texts}


def manifests() -> dict[Path, dict[str, str]]:
    return {
        BUILT_IN / "console.json": manifest_of(console_documents()),
        BUILT_IN / "python-client.json": manifest_of(python_client_documents()),
        BUILT_IN / "typescript-client.json": manifest_of(typescript_client_documents()),
    }


def rendered(manifest: dict[str, str]) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def stale() -> Iterator[Path]:
    for path, manifest in manifests().items():
        if not path.exists() or path.read_text(encoding="utf-8") != rendered(manifest):
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.graphql.documents.build")
    parser.add_argument("--check", action="store_true", help="only report stale manifests")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = list(stale())
        for path in out_of_date:
            print(f"stale: {path.relative_to(REPO_ROOT)}", file=sys.stderr)
        return 1 if out_of_date else 0
    BUILT_IN.mkdir(exist_ok=True)
    for path, manifest in manifests().items():
        path.write_text(rendered(manifest), encoding="utf-8")
        print(f"wrote {path.relative_to(REPO_ROOT)} ({len(manifest)} documents)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
