"""Checks on what goes into an exception record: references and the minimum facts, never
secrets or documents."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from server.domain.failures import InvalidInput

MAX_STEP = 200
MAX_STEPS = 100
MAX_REFERENCE = 500
MAX_REFERENCES = 50
MAX_FACTS_BYTES = 16 * 1024
EXCEPTION_ID = re.compile(r"^exc_[0-9A-HJKMNP-TV-Z]{20}$")
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")

# A key holds a credential when one of its words (camelCase, snake_case, kebab-case) is one
# of these, or two adjacent words make one of the pairs: the record would otherwise keep a
# secret that outlives its rotation. Words, not substrings: `companySecretary` is a fact.
_CREDENTIAL_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "secrets", "token", "tokens",
        "apikey", "credential", "credentials", "authorization", "cookie", "cookies", "bearer",
        "otp", "pin", "cvv", "cvc", "privatekey", "accesskey", "sessionid",
    }
)  # fmt: skip
_CREDENTIAL_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"),
     ("session", "id"), ("auth", "code"), ("security", "code")}
)  # fmt: skip
# Query or fragment parameters of a signed or tokened URL: a bearer credential in a link.
_SIGNED_URL_WORDS = frozenset({"signature", "sig"})
_SIGNED_URL_NAMES = frozenset({"key", "code", "jsessionid", "phpsessid", "sid"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _words(key: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(key)]


def looks_like_credential(key: str) -> bool:
    words = _words(key)
    if any(word in _CREDENTIAL_WORDS for word in words):
        return True
    return any(pair in _CREDENTIAL_PAIRS for pair in itertools.pairwise(words))


def _parameter_is_credential(name: str) -> bool:
    words = _words(name)
    return (
        looks_like_credential(name)
        or any(word in _SIGNED_URL_WORDS for word in words)
        or "".join(words) in _SIGNED_URL_NAMES
    )


def _keys(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            here = f"{path}.{key}" if path else str(key)
            yield str(key), here
            yield from _keys(inner, here)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _keys(inner, f"{path}[{index}]")


def check_facts(value: Any, field: str) -> InvalidInput | None:
    """A JSON object of plain facts: no credential-looking key at any depth, and small."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return InvalidInput(f"{field} must be a JSON object", field)
    for key, path in _keys(value, ""):
        if looks_like_credential(key):
            return InvalidInput(
                f"{field} key {path!r} looks like a credential; an exception record keeps "
                "references and minimum facts, never secrets",
                field,
            )
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_FACTS_BYTES:
        return InvalidInput(
            f"{field} is {size} bytes; at most {MAX_FACTS_BYTES}: store a reference to the "
            "document, not the document",
            field,
        )
    return None


def check_references(references: list[str], field: str, *, required: bool) -> InvalidInput | None:
    if required and not references:
        return InvalidInput(f"{field}: give at least one evidence reference", field)
    if len(references) > MAX_REFERENCES:
        return InvalidInput(f"{field}: at most {MAX_REFERENCES} references at once", field)
    for reference in references:
        if not 1 <= len(reference.strip()) <= MAX_REFERENCE or reference != reference.strip():
            return InvalidInput(
                f"{field}: a reference is 1 to {MAX_REFERENCE} characters, without "
                "surrounding spaces",
                field,
            )
        parts = urlsplit(reference)
        if parts.username or parts.password:
            return InvalidInput(f"{field}: a reference must not carry a user or password", field)
        # Query, fragment (OAuth puts tokens there) and path parameters (;jsessionid=).
        path_parameters = ";".join(parts.path.split(";")[1:])
        for place in (parts.query, parts.fragment, path_parameters):
            for name, _ in parse_qsl(place.replace(";", "&"), keep_blank_values=True):
                if _parameter_is_credential(name):
                    return InvalidInput(
                        f"{field}: reference parameter {name!r} looks like a credential (a "
                        "signed or tokened URL); give a stable reference instead",
                        field,
                    )
    return None


def check_steps(steps: list[str], field: str) -> InvalidInput | None:
    if len(steps) > MAX_STEPS:
        return InvalidInput(f"{field}: at most {MAX_STEPS} steps", field)
    if any(not 1 <= len(step) <= MAX_STEP for step in steps):
        return InvalidInput(f"{field}: a step name is 1 to {MAX_STEP} characters", field)
    if len(set(steps)) != len(steps):
        return InvalidInput(f"{field}: a step is named once", field)
    return None


def check_exception_id(value: str) -> InvalidInput | None:
    if not EXCEPTION_ID.fullmatch(value):
        return InvalidInput(f"exceptionId {value[:40]!r} is not an exception id", "exceptionId")
    return None
