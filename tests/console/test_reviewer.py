"""A reviewer at the console: sign in, claim, read, decide with the keyboard; and two
reviewers side by side never get the same item."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import Browser, Page, expect

from server.config_documents import DocumentMode
from tests.console.helpers import (
    ITEM_DECISIONS,
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    console_context,
    items_by_key,
    screenshot,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework


# Also against a server that runs trusted documents only: the console's are.
@pytest.mark.parametrize("casework", [DocumentMode.ANY, DocumentMode.TRUSTED], indirect=True)
async def test_a_reviewer_claims_reads_and_decides_with_the_keyboard(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=3)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        header = page.get_by_role("banner")
        await expect(header).to_contain_text("rita")
        await expect(header).to_contain_text("Reviewer")
        await expect(header).to_contain_text("kyc")
        queue = page.get_by_role("link", name="kyc", exact=True)
        await expect(queue).to_be_visible()
        await expect(page.locator("[data-figure=claimable] dd").first).to_have_text("3")
        await screenshot(page, "queues")

        await queue.click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        await page.keyboard.press("n")
        item = page.get_by_role("article", name="Item demo-0001")
        await expect(item).to_be_visible(timeout=SHOWN_WITHIN_MS)
        # Nested keys under their own headings, in words; no JSON blob unless asked.
        payload = item.get_by_role("group", name="Payload")
        await expect(payload.get_by_role("heading", name="Applicant")).to_be_visible()
        await expect(payload).to_contain_text("Date of birth")
        await expect(payload).to_contain_text("the second scan is the sharper one")
        await expect(payload.locator("pre")).to_be_hidden()
        lease = page.get_by_role("status", name="Lease")
        await expect(lease).to_contain_text("left")
        await expect(item).to_contain_text("First look")
        await page.keyboard.press("a")
        await expect(page.get_by_role("combobox", name="Reason")).to_have_value("documents_ok")
        await page.get_by_role("textbox", name="Decision note").fill("Photo and document agree.")
        await page.get_by_role("textbox", name="Decision note").press("Tab")
        await screenshot(page, "reviewer")
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible()

        # The decision is in the API, by rita, with the chosen reason and the note.
        first = (await items_by_key(casework.api, tokens.admin))["demo-0001"]
        decided = (await casework.api.call(tokens.admin, ITEM_DECISIONS, id=first["id"]))["item"]
        assert decided["state"] == "DECIDED"
        assert decided["currentDecision"] == {
            "verdict": "APPROVE",
            "reasonCode": "documents_ok",
            "reviewer": "rita",
            "note": "Photo and document agree.",
        }

        # One key for the next item; r narrows the reasons to rejecting ones.
        await page.keyboard.press("n")
        await expect(page.get_by_role("article", name="Item demo-0002")).to_be_visible()
        await page.keyboard.press("r")
        reasons = page.get_by_role("combobox", name="Reason")
        options = await reasons.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
        assert sorted(options) == ["", "document_expired", "name_mismatch"]
        await page.keyboard.press("?")
        await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
        await page.keyboard.press("Escape")

        # The token never reached the address bar or any storage but this tab's session.
        assert tokens.rita not in page.url
        stored = await page.evaluate(
            "() => [JSON.stringify(localStorage), document.cookie,"
            " sessionStorage.getItem('casework.token')]"
        )
        assert stored == ["{}", "", tokens.rita]
    assert not any(tokens.rita in line for line in casework.log)


async def claim_in(page: Page, previous: str | None) -> str:
    """Presses Claim next and returns the external key of the item the page shows next."""
    await page.get_by_role("button", name="Claim next").click()
    article = page.get_by_role("article")
    await expect(article).to_be_visible(timeout=SHOWN_WITHIN_MS)
    if previous is not None:
        await expect(article).not_to_have_attribute("aria-label", f"Item {previous}")
    name = await article.get_attribute("aria-label")
    assert name is not None
    assert name.startswith("Item ")
    return name.removeprefix("Item ")


async def decide(page: Page) -> None:
    await page.get_by_role("combobox", name="Reason").select_option("documents_ok")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text("Approved:")).to_be_visible(timeout=SHOWN_WITHIN_MS)


async def test_two_reviewers_never_see_the_same_item(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    rounds = 4
    await setup_kyc(casework.api, tokens, items=2 * rounds)
    async with (
        console_context(browser, casework.url) as (rita_context, _),
        console_context(browser, casework.url) as (rob_context, _),
    ):
        pages = [
            await sign_in(rita_context, casework.url, tokens.rita),
            await sign_in(rob_context, casework.url, tokens.rob),
        ]
        for page in pages:
            await page.get_by_role("link", name="kyc", exact=True).click()
            await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        seen: list[list[str]] = [[], []]
        for _ in range(rounds):
            # Both press Claim next at once.
            keys = await asyncio.gather(
                *(
                    claim_in(page, seen[who][-1] if seen[who] else None)
                    for who, page in enumerate(pages)
                )
            )
            assert keys[0] != keys[1]
            for who, key in enumerate(keys):
                seen[who].append(key)
            await asyncio.gather(*(decide(page) for page in pages))
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == [f"demo-{n:04d}" for n in range(1, 2 * rounds + 1)]
    by_key = await items_by_key(casework.api, tokens.admin)
    assert {item["state"] for item in by_key.values()} == {"DECIDED"}
