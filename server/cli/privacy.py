"""`casework privacy ...`: the operator's side of personal data (docs/privacy.md).

Each subcommand is a function that adds its parser to the group, registered with
`@privacy_command`; `add_privacy_commands` builds the group from the registry. A new
subcommand is one such function in this module (or one imported by it).
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Callable
from typing import TypeAlias

from server.cli.tokens import owner_database
from server.cli.users import operator
from server.config import Settings
from server.domain.privacy.keys import KeyError_, LocalKeyFile
from server.domain.privacy.rotation import BATCH_SIZE, Rotation, keys_by_kek, rotate_keys
from server.runtime import StartupError, resolve_databases

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
AddCommand = Callable[[Commands], None]

# The subcommands of `casework privacy`, in the order `--help` lists them.
PRIVACY_COMMANDS: list[AddCommand] = []

# How the privacy log records an operator's command (the actor is cli:<login name>).
CLI_ROLE = "cli"
KEK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")


def privacy_command(add: AddCommand) -> AddCommand:
    PRIVACY_COMMANDS.append(add)
    return add


def add_privacy_commands(commands: Commands) -> None:
    privacy = commands.add_parser(
        "privacy", help="personal data: key rotation and other operator tasks"
    )
    subcommands = privacy.add_subparsers(title="privacy commands", required=True, metavar="ACTION")
    for add in PRIVACY_COMMANDS:
        add(subcommands)


def kek_id(value: str) -> str:
    if not KEK_ID.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"a key id is 1 to 100 characters of A-Z, a-z, 0-9, '_', '.', ':', '-': {value!r}"
        )
    return value


def batch_size(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10000: {value!r}")
    return int(value)


@privacy_command
def _add_rotate_keys(commands: Commands) -> None:
    rotate = commands.add_parser(
        "rotate-keys",
        help="add a key-encryption key to the key file (CASEWORK_KEY_FILE), make it the "
        "active one, and wrap every data key again under it; the data is not touched",
    )
    rotate.add_argument(
        "--new-key-id",
        type=kek_id,
        metavar="ID",
        help="the new key's id (default: k<n>, one past the file's highest). The id of the "
        "key active already adds none and finishes a rotation that was cut short",
    )
    rotate.add_argument(
        "--batch-size",
        type=batch_size,
        default=BATCH_SIZE,
        metavar="N",
        help=f"data keys per statement (default {BATCH_SIZE})",
    )
    rotate.set_defaults(run=run_rotate_keys)


def run_rotate_keys(args: argparse.Namespace, settings: Settings) -> int:
    path = settings.privacy.key_file
    if path is None:
        raise StartupError("no key file is configured: set CASEWORK_KEY_FILE")
    try:
        keys = LocalKeyFile.load(path)
    except KeyError_ as error:
        raise StartupError(str(error)) from None
    databases = resolve_databases(settings)

    async def rotate() -> tuple[str | None, Rotation]:
        async with owner_database(databases, settings) as owner_db:
            # Read first: a database without the schema is refused before the file changes.
            await keys_by_kek(owner_db)
            added = None
            provider = keys
            if args.new_key_id != keys.active_kek_id:
                added = args.new_key_id or keys.next_kek_id()
                provider = keys.with_new_active(added)
            rotation = await rotate_keys(
                owner_db,
                provider,
                actor=operator(),
                actor_role=CLI_ROLE,
                batch_size=args.batch_size,
            )
            return added, rotation

    try:
        added, rotation = asyncio.run(rotate())
    except KeyError_ as error:
        raise StartupError(str(error)) from None
    print(describe_rotation(rotation, added=added, path=str(path)), flush=True)
    return 0


def describe_rotation(rotation: Rotation, *, added: str | None, path: str) -> str:
    lines = []
    if added is not None:
        lines.append(f"added key-encryption key {added!r} to {path}; it is the active one")
    moved = ", ".join(f"{kek}: {count}" for kek, count in rotation.rewrapped_from.items())
    lines.append(
        f"re-wrapped {rotation.rewrapped} data key(s) under {rotation.kek_id!r}"
        + (f" (from {moved})" if moved else "")
        + f"; {rotation.already_current} were under it already"
    )
    in_use = ", ".join(f"{kek}: {count}" for kek, count in rotation.keys_by_kek.items())
    lines.append(f"data keys by key-encryption key: {in_use or 'none'}")
    if rotation.retired:
        lines.append(
            f"no data key uses {', '.join(rotation.retired)} any more: keep them while a "
            "backup taken before now may be restored, then remove them from the key file"
        )
    return "\n".join(lines)
