"""`casework export search items|decisions`: a search's results as CSV, the file the
/export/*.csv routes send, for the operator (every queue).

The filters are the GraphQL input's fields as flags in kebab case (`--external-key-prefix`,
`--priority-at-least`); a list's flag is repeated (`--queues kyc --queues payouts`); values
are written as in the shared query-string form (`--states PENDING`, `--held true`,
`--decided-after 2026-10-01`). They are read by the same parser as the routes' parameters,
so a value one refuses the other refuses alike; a refusal is one line naming the flag.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from server.cli.export import _export_database, _Output, _output
from server.config import Settings
from server.domain.failures import InvalidInput
from server.domain.model import Principal, Role
from server.domain.search.filters import DecisionSearch, ItemSearch, SearchTooBroad
from server.domain.search.params import (
    DECISION_PARAMETERS,
    ITEM_PARAMETERS,
    Parameters,
    camel_case,
    decision_search_from_params,
    item_search_from_params,
    value_hint,
)
from server.runtime import StartupError, resolve_databases
from server.search_csv import ExportInterrupted, decisions_csv, items_csv

# The operator reads every queue, as the other exports do.
OPERATOR = Principal("casework-export", Role.ADMIN, frozenset())

_KINDS: Mapping[str, tuple[Parameters, str]] = {
    "items": (ITEM_PARAMETERS, "items, as Query.items finds them: one row per item"),
    "decisions": (
        DECISION_PARAMETERS,
        "decisions, as Query.decisions finds them: one row per decision, overturns included",
    ),
}


def flag(parameter: str) -> str:
    """A GraphQL field's flag: externalKeyPrefix → --external-key-prefix."""
    return "--" + "".join(f"-{c.lower()}" if c.isupper() else c for c in parameter)


def add_export_search_command(
    export_commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    search = export_commands.add_parser(
        "search",
        help="a search's results as CSV (the file GET /export/items.csv and "
        "/export/decisions.csv send), over every queue",
    )
    kinds = search.add_subparsers(title="what", required=True, metavar="KIND")
    for kind, (parameters, meaning) in _KINDS.items():
        command = kinds.add_parser(
            kind,
            help=meaning,
            description=f"{meaning}. WHEN: an ISO 8601 time (2026-10-01T09:30:00Z; UTC "
            "without an offset) or a date (2026-10-01, midnight UTC).",
        )
        for name, (parse, is_list) in parameters.items():
            parameter = camel_case(name)
            command.add_argument(
                flag(parameter),
                dest=name,
                metavar=value_hint(parse),
                action="append" if is_list else "store",
                help=f"filter {parameter}" + (", repeat for several" if is_list else ""),
            )
        command.add_argument(
            "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)"
        )
        command.set_defaults(run=run_export_search, kind=kind, parameters=parameters)


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for name, (_, is_list) in args.parameters.items():
        given = getattr(args, name)
        if given is None:
            continue
        values = given if is_list else [given]
        pairs.extend((camel_case(name), value) for value in values)
    return pairs


def _refusal(refusal: InvalidInput | SearchTooBroad) -> StartupError:
    """One line, naming the flag where the message names the field."""
    if isinstance(refusal, SearchTooBroad):
        flags = ", ".join(flag(name) for name in refusal.narrow_by)
        return StartupError(f"{refusal.message} (narrow it with {flags})")
    message = refusal.message
    if refusal.field and message.startswith(f"{refusal.field}: "):
        message = f"{flag(refusal.field)}: " + message[len(refusal.field) + 2 :]
    elif refusal.field:
        message = f"{flag(refusal.field)}: {message}"
    return StartupError(message)


def run_export_search(args: argparse.Namespace, settings: Settings) -> int:
    pairs = _pairs(args)
    search: ItemSearch | DecisionSearch | InvalidInput = (
        item_search_from_params(pairs)
        if args.kind == "items"
        else decision_search_from_params(pairs)
    )
    if isinstance(search, InvalidInput):
        raise _refusal(search)
    databases = resolve_databases(settings)
    now = datetime.now(UTC)

    async def write(out: _Output) -> None:
        async with _export_database(databases, settings) as db:
            if isinstance(search, ItemSearch):
                chunks = await items_csv(
                    db, OPERATOR, search, now=now, public_url=settings.auth.public_url
                )
            else:
                chunks = await decisions_csv(db, OPERATOR, search)
            if isinstance(chunks, InvalidInput | SearchTooBroad):
                raise _refusal(chunks)
            try:
                async for chunk in chunks:
                    out.write(chunk)
            except ExportInterrupted as stopped:
                raise StartupError(f"the export stopped part way: {stopped}") from None

    with _output(args.output) as out:
        asyncio.run(write(out))
    if args.output is not None:
        print(f"casework export: {args.kind} written to {args.output}", file=sys.stderr)
    return 0
