"""`casework auth explain`: what the claim-mapping rules make of one set of claims.

An admin tests a rule change before deploying it, on claims saved from the provider or on a
token. The server maps claims with the same code (RuleSet.explain), so what this prints is
what a login would get. No database is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError

from server.config import Settings
from server.domain.identity.rules import (
    Explanation,
    RuleFileError,
    RuleOutcome,
    RuleSet,
    describe_grant,
)

RULES_VARIABLE = "CASEWORK_AUTH_RULES"
UNVERIFIED_NOTE = "claims read from the token, signature not checked"

GRANTED = 0
DENIED = 1
BAD_INPUT = 2


class ClaimsError(ValueError):
    """Claims that cannot be read: a missing file, not JSON, not a JWT."""


def run_auth_explain(args: argparse.Namespace, settings: Settings) -> int:
    try:
        rules = RuleSet.load(_rule_file(args.rules))
        claims, source = _claims(args)
    except (RuleFileError, ClaimsError) as error:
        print(f"casework: error: {error}", file=sys.stderr)
        return BAD_INPUT
    explanation = rules.explain(claims)
    if args.json:
        if args.token is not None:
            print(f"casework: {UNVERIFIED_NOTE}", file=sys.stderr)
        print(json.dumps(explanation.to_json(), indent=2, ensure_ascii=False))
    else:
        print(format_explanation(explanation, rules=rules.source, claims=source))
    return GRANTED if explanation.grants else DENIED


def _rule_file(given: Path | None) -> Path:
    if given is not None:
        return given
    configured = os.environ.get(RULES_VARIABLE)
    if not configured:
        raise RuleFileError(f"no rule file: pass --rules FILE or set {RULES_VARIABLE}")
    return Path(configured)


def _claims(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The claims, and where they came from, as the output says it."""
    if args.token is not None:
        return claims_of_token(args.token), UNVERIFIED_NOTE
    if args.claims == "-":
        return _claims_object(sys.stdin.read(), "standard input"), "claims read from standard input"
    return _claims_object(_read(Path(args.claims)), args.claims), f"claims read from {args.claims}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ClaimsError(f"cannot read the claims file: {error}") from error


def _claims_object(text: str, source: str) -> dict[str, Any]:
    try:
        claims = json.loads(text)
    except json.JSONDecodeError as error:
        raise ClaimsError(f"{source}: the claims are not JSON: {error}") from error
    if not isinstance(claims, dict):
        raise ClaimsError(f'{source}: the claims are a JSON object ({{"sub": ...}})')
    return claims


def claims_of_token(token: str) -> dict[str, Any]:
    """The payload of a signed JWT, read WITHOUT checking its signature: for explaining only,
    never for deciding who someone is."""
    try:
        signed = jws.extract_compact(token.strip().encode())
    except (JoseError, ValueError) as error:
        raise ClaimsError(
            f"--token is not a signed JWT (three base64url parts; an encrypted token cannot "
            f"be read without its key): {error}"
        ) from error
    return _claims_object(signed.payload.decode("utf-8", errors="replace"), "the token's payload")


def format_explanation(explanation: Explanation, *, rules: str, claims: str) -> str:
    """Each rule (matched or not, and why), then the grants or the refusal."""
    lines = [f"rules: {rules}", f"{claims}", ""]
    lines += [_rule_line(outcome) for outcome in explanation.outcomes]
    lines.append("")
    if explanation.refusal is not None:
        lines.append(f"access denied: {explanation.refusal}")
        return "\n".join(lines)
    lines.append("grants:")
    for position, grant in enumerate(explanation.grants):
        active = "  (active unless the request asks for another role)" if position == 0 else ""
        lines.append(f"  {describe_grant(grant)}{active}")
    return "\n".join(lines)


def _rule_line(outcome: RuleOutcome) -> str:
    if outcome.matched:
        gives = describe_grant(outcome.grant, with_rules=False)
        return f"  matched      {outcome.rule}: {outcome.reason} -> {gives}"
    return f"  not matched  {outcome.rule}: {outcome.reason}"
