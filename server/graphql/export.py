"""Writes the schema's SDL: `python -m server.graphql.export > schema.graphql`."""

from __future__ import annotations

from server.graphql.schema import build_schema


def export_sdl() -> str:
    return build_schema(dev=True).as_str() + "\n"


if __name__ == "__main__":
    print(export_sdl(), end="")
