from __future__ import annotations

from server.config import REPO_ROOT
from server.graphql.export import export_sdl


def test_schema_graphql_matches_the_code() -> None:
    committed = (REPO_ROOT / "schema.graphql").read_text()
    assert committed == export_sdl(), (
        "schema.graphql differs from the code; run "
        "`python -m server.graphql.export > schema.graphql` and review the diff"
    )
