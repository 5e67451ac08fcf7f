"""The console names its documents by id (`documentId`, the SHA-256 of the text), each one a
trusted document of the built-in manifest; where the page cannot hash, it sends the text."""

from __future__ import annotations

import json
from typing import Any

from playwright.async_api import BrowserContext, Request, expect

from server.graphql.documents.manifest import BUILT_IN
from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    console_context,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework

# What a page outside a secure context has: no crypto.subtle.
WITHOUT_SUBTLE = "Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined });"


def record_graphql_posts(context: BrowserContext) -> list[dict[str, Any]]:
    """The JSON body of every POST to /graphql the context's pages send from now on."""
    sent: list[dict[str, Any]] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/graphql"):
            body = request.post_data_json
            # Anything but a JSON object fails the tests' checks below, as it should.
            sent.append(body if isinstance(body, dict) else {"not an object": request.post_data})

    context.on("request", on_request)
    return sent


async def claim_the_first_item(context: BrowserContext, casework: Casework, token: str) -> None:
    page = await sign_in(context, casework.url, token)
    await page.get_by_role("link", name="kyc", exact=True).click()
    await page.get_by_role("button", name="Claim next").click()
    await expect(page.get_by_role("article", name="Item demo-0001")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )


async def test_the_console_sends_document_ids_of_the_built_in_manifest(
    browser: Any, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=1)
    console = json.loads((BUILT_IN / "console.json").read_text())
    async with console_context(browser, casework.url) as (context, _):
        sent = record_graphql_posts(context)
        await claim_the_first_item(context, casework, tokens.rita)
    assert len(sent) >= 3, sent
    assert [body for body in sent if "query" in body or "documentId" not in body] == []
    names = [console[body["documentId"]].split("(")[0].split("{")[0].split()[1] for body in sent]
    assert {"Me", "Queues", "ClaimNext"} <= set(names), names


async def test_without_crypto_subtle_the_console_sends_the_text(
    browser: Any, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=1)
    console = json.loads((BUILT_IN / "console.json").read_text())
    async with console_context(browser, casework.url) as (context, _):
        await context.add_init_script(WITHOUT_SUBTLE)
        sent = record_graphql_posts(context)
        await claim_the_first_item(context, casework, tokens.rita)
    assert sent
    assert [body for body in sent if "documentId" in body] == []
    assert all(body["query"] in console.values() for body in sent)
