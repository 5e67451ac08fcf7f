"""`python -m tests.ha NAME [ARGS]`: starts the harness `tests/ha/NAME.py` by hand (its
`main(argv)`), prints how to reach it, and stops it on Ctrl-C. `python -m tests.ha patroni`:
the failover cluster (docs/operations.md)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path


def harnesses() -> list[str]:
    """The modules of this package that can be run by hand (those with a `main`)."""
    here = str(Path(__file__).parent)
    names = []
    for module in pkgutil.iter_modules([here]):
        if module.name.startswith("test") or module.name.startswith("_"):
            continue
        if hasattr(importlib.import_module(f"tests.ha.{module.name}"), "main"):
            names.append(module.name)
    return sorted(names)


def main(argv: list[str]) -> int:
    available = harnesses()
    if not argv or argv[0] not in available:
        print(f"usage: python -m tests.ha {{{','.join(available)}}} [args]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"tests.ha.{argv[0]}")
    if inspect.signature(module.main).parameters:
        code: int | None = module.main(argv[1:])
    else:
        # A harness that reads no arguments (`python -m tests.ha.NAME` works as well).
        sys.argv = [f"tests.ha.{argv[0]}", *argv[1:]]
        code = module.main()
    return code or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
