"""GET /export/items.csv and /export/decisions.csv, and `casework export search`: the
API's rows for the same search, streamed page by page, within the caller's queues, refused
as the API refuses, and never a complete-looking file when a page fails."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette

from server import search_csv
from server.app import create_app
from server.config import Settings
from server.domain.model import Role
from server.domain.search import filters
from server.domain.search.filters import SearchTooBroad
from server.search_csv import DECISION_COLUMNS, ITEM_COLUMNS
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import casework
from tests.api.search_export_helpers import (
    FORMULA_KEYS,
    ITEMS_PAGE,
    api_decision_rows,
    api_item_rows,
    download,
    seed,
)
from tests.conftest import TestDatabase, token_maker

PUBLIC_URL = "https://casework.example"
# Small pages, so a few dozen rows take several.
PAGE = 3


@pytest.fixture
async def app(
    test_database: TestDatabase, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Starlette]:
    # In the environment, so that `casework` run by a test links alike.
    monkeypatch.setenv("CASEWORK_PUBLIC_URL", PUBLIC_URL)
    app = create_app(test_database.app_dsn, dev=False, settings=Settings.from_env())
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://casework") as c:
        yield c


@pytest.fixture
async def seeded(gql: GraphQL, tokens: Tokens, kyc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await seed(gql, tokens)
    monkeypatch.setattr(search_csv, "PAGE_SIZE", PAGE)


def query(**given: Any) -> str:
    pairs: list[tuple[str, str]] = []
    for name, value in given.items():
        values = value if isinstance(value, list) else [value]
        pairs += [(name, str(v)) for v in values]
    return urlencode(pairs)


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("order", ["NEWEST_FIRST", "OLDEST_FIRST"])
async def test_the_items_csv_has_the_apis_rows_page_by_page(
    app: Starlette, gql: GraphQL, tokens: Tokens, owner_conn: asyncpg.Connection, order: str
) -> None:
    for asked in ({}, {"queues": ["kyc", "payouts"], "states": ["PENDING", "DECIDED"]}):
        got = await download(app, f"/export/items.csv?{query(order=order, **asked)}", tokens.admin)
        expected = await api_item_rows(
            gql, owner_conn, tokens.admin, PUBLIC_URL, order=order, **asked
        )

        assert got.status == 200, got.text
        assert got.complete
        assert got.headers["content-type"] == "text/csv; charset=utf-8"
        assert re.fullmatch(
            r'attachment; filename="casework-items-\d{8}T\d{6}Z\.csv"',
            got.headers["content-disposition"],
        )
        assert got.rows[0] == list(ITEM_COLUMNS)
        assert got.rows[1:] == expected
        assert len(expected) > 4 * PAGE
        # The header, then one chunk per page.
        assert len(got.chunks) == 1 + -(-len(expected) // PAGE)


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("order", ["NEWEST_FIRST", "OLDEST_FIRST"])
async def test_the_decisions_csv_has_the_apis_rows_page_by_page(
    app: Starlette,
    gql: GraphQL,
    tokens: Tokens,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    order: str,
) -> None:
    compliance = await token_maker(owner_db)("cora", Role.COMPLIANCE)
    for token in (tokens.admin, compliance):
        got = await download(app, f"/export/decisions.csv?{query(order=order)}", token)
        expected = await api_decision_rows(gql, owner_conn, token, order=order)

        assert got.status == 200, got.text
        assert got.complete
        assert re.fullmatch(
            r'attachment; filename="casework-decisions-\d{8}T\d{6}Z\.csv"',
            got.headers["content-disposition"],
        )
        assert got.rows[0] == list(DECISION_COLUMNS)
        assert got.rows[1:] == expected
        assert len(expected) == 6
        assert len(got.chunks) == 1 + 2


@pytest.mark.usefixtures("seeded")
async def test_a_manager_of_kyc_exports_kyc_only(
    app: Starlette, gql: GraphQL, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    manager = await token_maker(owner_db)("mia", Role.MANAGER, "kyc")

    items = await download(app, "/export/items.csv", manager)
    asked = await download(app, "/export/items.csv?queues=payouts", manager)
    decisions = await download(app, "/export/decisions.csv", manager)

    assert items.rows[1:] == await api_item_rows(gql, owner_conn, manager, PUBLIC_URL)
    assert {row[1] for row in items.rows[1:]} == {"kyc"}
    assert asked.rows == [list(ITEM_COLUMNS)]
    assert asked.complete
    assert decisions.rows[1:] == await api_decision_rows(gql, owner_conn, manager)
    assert {row[2] for row in decisions.rows[1:]} == {"kyc"}
    # The escalated item now sits in kyc-senior: its key is not the manager's to see.
    escalated = [row for row in decisions.rows[1:] if row[4] == "ESCALATE"]
    assert [row[3] for row in escalated] == [""]


@pytest.mark.usefixtures("seeded")
async def test_formula_like_text_is_written_as_text(app: Starlette, tokens: Tokens) -> None:
    items = await download(app, "/export/items.csv", tokens.admin)
    decisions = await download(app, "/export/decisions.csv", tokens.admin)

    keys = {row[3] for row in items.rows[1:]}
    assert {"'" + key for key in FORMULA_KEYS} <= keys
    assert not keys & set(FORMULA_KEYS)
    notes = {row[11] for row in decisions.rows[1:]}
    assert {'\'=HYPERLINK("http://example.invalid")', "'-wrong", "checked, all fine"} <= notes


async def test_only_managers_compliance_and_admins_export(
    app: Starlette, tokens: Tokens, owner_db: Database
) -> None:
    refused = {}
    for who, token in (("reviewer", tokens.reviewer), ("approver", tokens.approver)):
        refused[who] = await download(app, "/export/items.csv", token)
    anonymous = await download(app, "/export/decisions.csv")
    unknown = await download(app, "/export/decisions.csv", "not-a-token")

    for got in refused.values():
        assert got.status == 403
        assert got.json() == {
            "errors": [
                {
                    "message": "exporting search results is for managers, compliance and admins",
                    "extensions": {"code": "FORBIDDEN"},
                }
            ]
        }
    for got in (anonymous, unknown):
        assert got.status == 401
        assert got.headers["www-authenticate"] == "Bearer"
        assert got.json()["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED"}


async def test_a_bad_parameter_is_refused_by_name_before_any_row(
    app: Starlette, tokens: Tokens
) -> None:
    cases = {
        "/export/items.csv?states=pending": "states",
        "/export/items.csv?q=app-7731": "q",
        "/export/items.csv?held=yes": "held",
        "/export/decisions.csv?states=PENDING": "states",
        "/export/decisions.csv?decidedAfter=last+week": "decidedAfter",
    }
    for url, field in cases.items():
        got = await download(app, url, tokens.manager)

        assert got.status == 400, url
        (error,) = got.json()["errors"]
        assert error["extensions"] == {"code": "BAD_REQUEST", "field": field}, url
        assert error["message"].startswith(f"{field}: "), error


async def test_the_cli_writes_what_the_route_sends(
    app: Starlette, tokens: Tokens, seeded: None, test_database: TestDatabase, tmp_path: Path
) -> None:
    output = tmp_path / "kyc.csv"
    over_http = await download(
        app, "/export/items.csv?queues=kyc&order=OLDEST_FIRST&priorityAtLeast=2", tokens.admin
    )
    decisions = await download(app, "/export/decisions.csv?verdict=APPROVE", tokens.admin)

    to_file = await casework(
        test_database,
        tmp_path,
        f"export search items --queues kyc --order OLDEST_FIRST --priority-at-least 2 "
        f"--output {output}",
    )
    to_stdout = await casework(test_database, tmp_path, "export search decisions --verdict APPROVE")

    assert to_file.code == 0, to_file.stderr
    assert output.read_bytes() == b"".join(over_http.chunks)
    assert not output.with_name("kyc.csv.partial").exists()
    assert len(over_http.rows) > 1
    assert to_stdout.code == 0, to_stdout.stderr
    assert to_stdout.stdout == decisions.text


async def test_the_cli_refuses_a_bad_flag_in_one_line(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    state = await casework(test_database, tmp_path, "export search items --states pending")
    moment = await casework(
        test_database, tmp_path, "export search decisions --decided-before soon --output x.csv"
    )

    assert (state.code, state.stdout) == (2, "")
    assert state.stderr == (
        "casework: error: --states: 'pending' is not an item state "
        "(one of PENDING, LEASED, DECIDED, PARKED)\n"
    )
    assert (moment.code, moment.stdout) == (2, "")
    assert moment.stderr.startswith("casework: error: --decided-before: expected an ISO 8601")
    assert moment.stderr.count("\n") == 1
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.usefixtures("seeded")
async def test_a_database_failure_mid_stream_cuts_the_download_short(
    app: Starlette,
    tokens: Tokens,
    owner_conn: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fail_after_the_first_page(chunk: int) -> None:
        if chunk == 2:
            await owner_conn.execute("REVOKE SELECT ON review_decisions FROM casework_app")

    with caplog.at_level(logging.INFO, logger="casework.export"):
        got = await download(
            app,
            "/export/items.csv?order=OLDEST_FIRST",
            tokens.admin,
            on_chunk=fail_after_the_first_page,
        )

    assert got.status == 200
    assert not got.complete
    assert len(got.chunks) == 2
    assert len(got.rows) == 1 + PAGE
    lines = [r for r in caplog.records if r.name == "casework.export"]
    assert [r.getMessage().split(":")[0] for r in lines] == ["items export cut short"]
    assert "permission denied" in lines[0].getMessage()
    assert lines[0].exc_info is None


@pytest.mark.usefixtures("seeded")
async def test_a_search_the_domain_refuses_is_a_400_naming_the_filter(
    app: Starlette, tokens: Tokens
) -> None:
    got = await download(app, "/export/items.csv?priorityAtLeast=5&priorityAtMost=1", tokens.admin)

    assert got.status == 400
    assert got.json() == {
        "errors": [
            {
                "message": "priorityAtLeast (5) is above priorityAtMost (1): nothing could match",
                "extensions": {"code": "BAD_REQUEST", "field": "priorityAtLeast"},
            }
        ]
    }


@pytest.mark.usefixtures("seeded")
async def test_a_search_too_broad_for_its_first_page_is_refused_with_what_narrows_it(
    app: Starlette, gql: GraphQL, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filters, "SCAN_LIMIT", 2)

    got = await download(app, "/export/items.csv?order=OLDEST_FIRST", tokens.admin)
    api = await gql(tokens.admin, ITEMS_PAGE, filter={"order": "OLDEST_FIRST"}, after=None)

    assert got.status == 400
    (error,) = got.json()["errors"]
    (api_error,) = api["errors"]
    assert error["message"] == api_error["message"]
    assert error["message"].startswith("This search would read more than 2 items for one page")
    assert error["extensions"] == {
        "code": "LIMIT_EXCEEDED",
        "narrowBy": api_error["extensions"]["narrowBy"],
    }
    assert "enqueuedAfter" in error["extensions"]["narrowBy"]


@pytest.mark.usefixtures("seeded")
async def test_a_later_page_refused_cuts_the_download_short(
    app: Starlette,
    tokens: Tokens,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The search itself runs; its second page is answered as a search grown too broad
    # between pages would be (rows arriving under it), which no fixture here can time.
    searched = search_csv.search_items
    calls = 0

    async def second_page_refused(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            return SearchTooBroad("This search would read more than 2 items for one page", ())
        return await searched(*args)

    monkeypatch.setattr(search_csv, "search_items", second_page_refused)
    with caplog.at_level(logging.INFO, logger="casework.export"):
        got = await download(app, "/export/items.csv", tokens.admin)

    assert (got.status, got.complete, len(got.rows)) == (200, False, 1 + PAGE)
    lines = [r.getMessage() for r in caplog.records if r.name == "casework.export"]
    assert lines == [
        "items export cut short: This search would read more than 2 items for one page"
    ]
