"""No hand-written module grows past what a newcomer reads in one sitting: a module over
500 lines is split by what it holds (docs/architecture.md, "Module size"). The generated
statement symbols are left out: they are as long as db/queries is."""

from __future__ import annotations

from server.config import REPO_ROOT

MAX_LINES = 500
GENERATED = REPO_ROOT / "server" / "store" / "sql"


def test_no_hand_written_module_is_over_the_limit() -> None:
    sizes = {
        path.relative_to(REPO_ROOT).as_posix(): len(path.read_text().splitlines())
        for path in (REPO_ROOT / "server").rglob("*.py")
        if GENERATED not in path.parents
    }

    assert sizes, "no modules found: the walk looked in the wrong place"
    too_long = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not too_long, too_long
