"""Where a process's CPU goes, by library: a py-spy profile summed by the file of each
sample's innermost frame.

    py-spy record --pid PID --duration 20 --rate 250 --format raw --output profile.txt
    .venv/bin/python bench/spy_groups.py profile.txt

py-spy samples Python frames; time in C (asyncpg's protocol, uvloop, httptools) is charged
to the Python frame that called it, so "asyncpg" includes its Cython protocol and "event
loop" the loop's own polling and callbacks. Samples of a thread waiting for the GIL or idle
in the loop's poll are left out when py-spy records without --idle, as above.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

# First match wins: the library a frame's file belongs to. py-spy names files relative to
# the entry of sys.path they were found in ("asyncpg/pool.py", "server/app.py", "typing.py").
GROUPS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("asyncpg", r"^asyncpg/"),
        ("uvicorn and httptools", r"^(uvicorn|httptools)/"),
        ("event loop", r"^(asyncio|uvloop)/"),
        ("strawberry", r"^strawberry/"),
        ("graphql-core", r"^graphql/"),
        ("starlette", r"^(starlette|cross_web)/"),
        ("prometheus-client", r"^prometheus_client/"),
        ("logging", r"^logging/"),
        ("json", r"^(json|orjson)/"),
        ("casework", r"^(server|bench)/|^[a-z_]+_bench\.py$|^request_cost\.py$"),
        ("other stdlib", r"^[a-z_]+(/[a-z_]+)*\.py$|^<frozen"),
    )
)
FRAME = re.compile(r"\((?P<file>[^:()]+)(?::\d+)?\)$")


def group_of(frame: str) -> str:
    match = FRAME.search(frame)
    path = match.group("file") if match else frame
    for name, pattern in GROUPS:
        if pattern.search(path):
            return name
    return "other"


def summarise(lines: list[str]) -> tuple[int, collections.Counter[str]]:
    shares: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        shares[group_of(stack.split(";")[-1])] += samples
    return total, shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="py-spy's --format raw output")
    arguments = parser.parse_args()
    total, shares = summarise(arguments.profile.read_text().splitlines())
    print(f"{total} samples")
    for name, samples in shares.most_common():
        print(f"{100 * samples / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
