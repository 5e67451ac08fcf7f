"""A manager's bulk actions at the console: the queue's waiting items with checkboxes, and
a bulk hold of the checked ones that skips a leased item and lists it with why."""

from __future__ import annotations

from datetime import datetime, timedelta

from playwright.async_api import Browser, expect

from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    console_context,
    hold_reasons,
    item_controls,
    item_ids,
    screenshot,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework


async def test_a_bulk_hold_holds_the_checked_items_and_lists_the_leased_one_it_skipped(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=4)
    await hold_reasons(api, tokens)
    # Rob works on demo-0001: a bulk action without "Revoke their leases" leaves it be.
    claim = await api.claim(tokens.rob, "kyc")
    ids = await item_ids(api, tokens)
    assert claim["item"]["id"] == ids["demo-0001"]
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        panel = page.get_by_role("region", name="Waiting items")
        rows = panel.get_by_role("table", name="Waiting items").locator("tbody tr")
        await expect(rows).to_have_count(4, timeout=SHOWN_WITHIN_MS)
        await expect(rows.filter(has_text="demo-0001")).to_contain_text("Leased by rob")
        bar = panel.get_by_role("group", name="Bulk actions")
        await expect(bar.get_by_role("button", name="Hold…")).to_be_disabled()
        for key in ("demo-0001", "demo-0002", "demo-0003"):
            await panel.get_by_role("checkbox", name=f"Select {key}").check()
        await expect(bar).to_contain_text("3 items checked")
        await bar.get_by_role("button", name="Hold…").click()
        hold = panel.get_by_role("form", name="Hold")
        await hold.get_by_role("combobox", name="Hold reason").select_option("awaiting_bank")
        until = (datetime.now() + timedelta(days=2)).strftime("%Y-%m-%dT09:00")
        await hold.get_by_role("textbox", name="Hold until").fill(until)
        await hold.get_by_role("button", name="Hold 3 items").click()

        result = panel.get_by_role("status").filter(has_text="Held")
        await expect(result).to_contain_text("Held 2 of 3 items.", timeout=SHOWN_WITHIN_MS)
        skipped = result.get_by_role("list", name="Skipped items").get_by_role("listitem")
        await expect(skipped).to_have_count(1)
        await expect(skipped).to_contain_text("demo-0001")
        await expect(skipped).to_contain_text("leased by rob")
        await expect(rows.filter(has_text="demo-0002")).to_contain_text("On hold: awaiting_bank")
        await expect(rows.filter(has_text="demo-0003")).to_contain_text("On hold: awaiting_bank")
        await expect(rows.filter(has_text="demo-0004")).not_to_contain_text("On hold")
        # The skipped item stays checked, for a second try that revokes the lease.
        await expect(panel.get_by_role("checkbox", name="Select demo-0001")).to_be_checked()
        # The queue's Now figures count the held items apart (they follow the backlog).
        held = page.locator("[data-panel=now] [data-figure=held] dd.figure-value")
        await expect(held).to_have_text("2", timeout=SHOWN_WITHIN_MS)
        await expect(
            page.locator("[data-panel=now] [data-figure=pending] dd.figure-value")
        ).to_have_text("1")
        await screenshot(page, "bulk")

    for key, reason in (("demo-0001", None), ("demo-0002", "awaiting_bank"), ("demo-0004", None)):
        item = await item_controls(api, tokens.admin, ids[key])
        assert (item["hold"] or {}).get("reason") == reason, (key, item)
    leased = await item_controls(api, tokens.admin, ids["demo-0001"])
    assert leased["lease"] == {"owner": "rob"}
