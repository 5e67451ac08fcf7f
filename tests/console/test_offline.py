"""Everything the console and GraphiQL load comes from the server itself, under a strict
Content-Security-Policy; the console works against a production-mode server."""

from __future__ import annotations

import re

import httpx
from playwright.async_api import Browser, expect

from tests.api.live_server import casework_serve_process
from tests.conftest import TestDatabase
from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    WorkflowTokens,
    console_context,
    open_console,
    screenshot,
    section,
    setup_kyc,
    setup_workflow,
    sign_in,
)
from tests.live.helpers import Casework, serve_env

ASSET = re.compile(r'(?:src|href)="(\./[^"]+)"')
IMPORT = re.compile(r'from "(\.{1,2}/[^"]+)"')


def assert_strict_policy(response: httpx.Response, origin: str) -> None:
    policy = response.headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["connect-src"] == f"'self' {origin.replace('http://', 'ws://')}"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_every_console_file_comes_from_the_server_under_a_strict_policy(
    casework: Casework,
) -> None:
    client = casework.api.client
    moved = await client.get("/console")
    assert (moved.status_code, moved.headers["location"]) == (308, "/console/")
    page = await client.get("/console/")
    assert page.status_code == 200
    assert_strict_policy(page, casework.url)
    assert "<script>" not in page.text
    assert "style=" not in page.text
    # The page's assets and, module by module, everything they import.
    pending = [f"/console/{path[2:]}" for path in ASSET.findall(page.text)]
    seen: set[str] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        response = await client.get(path)
        assert response.status_code == 200, path
        assert_strict_policy(response, casework.url)
        if path.endswith(".js"):
            assert response.headers["content-type"].startswith("text/javascript"), path
            base = path.rsplit("/", 1)[0]
            for target in IMPORT.findall(response.text):
                pending.append(str(httpx.URL(f"http://x{base}/").join(target).path))
    assert "/console/vendor/graphql-ws/client.js" in seen
    assert "/console/vendor/uPlot.esm.js" in seen


async def test_the_console_works_against_a_production_server_with_the_network_blocked(
    browser: Browser,
    casework: Casework,
    tokens: ConsoleTokens,
    people: WorkflowTokens,
) -> None:
    await setup_kyc(casework.api, tokens, items=2)
    await setup_workflow(casework.api, people, ("SUP-1", "HIGH"))
    # Production mode: no introspection, and no GraphiQL.
    refused = await casework.api.client.post(
        "/graphql",
        json={"query": "{ __schema { queryType { name } } }"},
        headers={"Authorization": f"Bearer {tokens.manager}"},
    )
    assert "introspection" in refused.json()["errors"][0]["message"].lower()
    ide = await casework.api.client.get("/graphql", headers={"Accept": "text/html"})
    assert ide.status_code == 404
    # console_context aborts and records any request to another origin, and fails the
    # test on one, on an error in the page, or on a policy violation.
    async with console_context(browser, casework.url) as (context, watch):
        first = await open_console(context, casework.url)
        await expect(first.get_by_role("button", name="Sign in")).to_be_visible()
        await screenshot(first, "sign-in")
        page = await sign_in(context, casework.url, tokens.manager)
        await expect(page.get_by_role("link", name="kyc", exact=True)).to_be_visible()
        await section(page, "Exceptions").click()
        await expect(page.get_by_role("link", name="SUP-1")).to_be_visible()
        await page.get_by_role("link", name="SUP-1").click()
        await expect(page.get_by_role("region", name="History")).to_contain_text("Raised")
        await section(page, "Manage").click()
        await page.get_by_role("link", name="kyc", exact=True).click()
        await expect(page.locator("[data-panel=backlog] canvas")).to_have_count(1)
        await page.keyboard.press("?")
        await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
    assert watch.foreign_requests == []


async def test_graphiql_in_dev_loads_offline_and_takes_a_token_in_its_headers(
    browser: Browser, test_database: TestDatabase, tokens: ConsoleTokens
) -> None:
    async with (
        casework_serve_process(serve_env(test_database), "--dev") as served,
        console_context(browser, served.url) as (context, _),
    ):
        page = await context.new_page()
        response = await page.goto(f"{served.url}/graphql")
        assert response is not None
        policy = response.headers["content-security-policy"]
        assert "default-src 'self'" in policy
        assert "script-src 'self';" in policy
        await page.get_by_role("button", name="Headers").click()
        headers = page.locator(".graphiql-editor-tool .CodeMirror").last
        await headers.click()
        await page.keyboard.press("Control+a")
        await page.keyboard.insert_text(f'{{"Authorization": "Bearer {tokens.manager}"}}')
        await page.keyboard.press("Control+Enter")
        result = page.locator(".result-window")
        await expect(result).to_contain_text('"user": "max"', timeout=SHOWN_WITHIN_MS)
        # The query stays out of the address bar, and so does the token.
        assert "?" not in page.url


async def test_a_request_elsewhere_is_stopped_and_recorded(
    browser: Browser, casework: Casework
) -> None:
    """The guards the other tests rely on: the console's policy refuses a request to
    another origin (and the watch sees the violation), and where no policy stands the
    watch sees the request itself and aborts it."""
    fetch_elsewhere = "() => fetch('https://cdn.example.com/react.js').then(() => 1, () => 0)"
    async with console_context(browser, casework.url) as (context, watch):
        page = await context.new_page()
        await page.goto(f"{casework.url}/console/")
        async with page.expect_console_message(
            lambda message: "Content Security Policy" in message.text
        ):
            assert await page.evaluate(fetch_elsewhere) == 0
        assert watch.policy_violations
        assert watch.foreign_requests == []
        blank = await context.new_page()
        assert await blank.evaluate(fetch_elsewhere) == 0
        assert watch.foreign_requests == ["https://cdn.example.com/react.js"]
        # Both seen: let the context close cleanly.
        watch.foreign_requests.clear()
        watch.policy_violations.clear()
