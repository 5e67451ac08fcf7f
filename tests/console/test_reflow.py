"""The console on a phone's width and at 200% zoom (issue 23): every page fits the window's
width (no sideways scroll of the page; a wide table scrolls in a box of its own, which the
keyboard can scroll too), every control is on screen and can be pressed, and axe-core finds
nothing serious there either.

200% zoom in a browser halves the CSS viewport: a 1280 x 880 window at 200% lays the page
out in 640 x 440 CSS pixels and draws each one as two. That is what the "zoom" size is (a
640 x 440 viewport at device scale factor 2), so its pictures are what that window shows.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import asyncpg
import pytest
from playwright.async_api import Browser, BrowserContext, Locator, Page, ViewportSize, expect

from tests.console.accessibility import Audit
from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    Watch,
    WorkflowTokens,
    console_context,
    item_ids,
    open_console,
    screenshot,
    section,
    seed_kyc_history,
    seed_workflow_history,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework


@dataclass(frozen=True)
class Size:
    viewport: ViewportSize
    scale: float
    # The pictures: the whole page, or the first screen of it (what the window shows).
    full_pages: bool


SIZES = {
    # A small phone, held upright.
    "narrow": Size({"width": 360, "height": 740}, scale=1, full_pages=True),
    # A 1280 x 880 window at 200% zoom.
    "zoom": Size({"width": 640, "height": 440}, scale=2, full_pages=False),
}
# Where the page is wider than the window, and which controls lie outside it (sideways)
# without a box of their own to scroll them into view.
LAYOUT = """() => {
  const page = document.scrollingElement;
  const width = page.clientWidth;
  const scrollsSideways = (node) => {
    for (let box = node.parentElement; box; box = box.parentElement) {
      const overflow = getComputedStyle(box).overflowX;
      if ((overflow === "auto" || overflow === "scroll") && box.scrollWidth > box.clientWidth) {
        return box;
      }
    }
    return null;
  };
  const outside = [];
  const boxes = new Set();
  const controls = "a[href], button, input, select, textarea, summary, [tabindex]";
  for (const node of document.querySelectorAll(controls)) {
    const rect = node.getBoundingClientRect();
    if (!rect.width || !rect.height || node.closest("[hidden], dialog:not([open])")) continue;
    if (rect.left >= -1 && rect.right <= width + 1) continue;
    const box = scrollsSideways(node);
    if (box) boxes.add(box);
    else outside.push(
      `${node.outerHTML.slice(0, 120)} (${Math.round(rect.left)} to ${Math.round(rect.right)})`);
  }
  // A box that scrolls sideways is reachable by keyboard: it is in the tab order, named.
  const unreachable = [...boxes]
    .filter((box) => box.tabIndex < 0 || !box.getAttribute("aria-label"))
    .map((box) => box.outerHTML.slice(0, 120));
  return { scrollWidth: page.scrollWidth, width, outside, unreachable };
}"""


async def assert_fits(page: Page, view: str) -> None:
    """The page is no wider than the window; every control is within it, or in a named box
    of its own that the keyboard can scroll."""
    await page.wait_for_load_state()
    found = await page.evaluate(LAYOUT)
    assert found["scrollWidth"] <= found["width"], (
        f"{view}: the page scrolls sideways ({found['scrollWidth']} px in {found['width']})"
    )
    assert found["outside"] == [], f"{view}: controls outside the window"
    assert found["unreachable"] == [], f"{view}: a box that scrolls sideways, not by keyboard"


async def assert_usable(*controls: Locator) -> None:
    """Each control is visible, enabled and takes a press where it is drawn (scrolled to,
    nothing covers it): Playwright's checks before a click, without the click."""
    for control in controls:
        await expect(control).to_be_visible()
        await expect(control).to_be_enabled()
        await control.click(trial=True)


async def check(page: Page, audit: Audit, size: str, view: str, *controls: Locator) -> None:
    await assert_fits(page, f"{view} ({size})")
    await assert_usable(*controls)
    await audit(page, f"{view} ({size})")
    # The manager's pages are long: their first screen shows how they start.
    long_page = view.startswith("manager-")
    await screenshot(page, f"{size}-{view}", full_page=SIZES[size].full_pages and not long_page)


@pytest.mark.parametrize("size", list(SIZES))
async def test_every_page_fits_the_width_and_its_controls_work(
    size: str,
    browser: Browser,
    casework: Casework,
    tokens: ConsoleTokens,
    people: WorkflowTokens,
    owner_conn: asyncpg.Connection,
) -> None:
    api = casework.api
    await seed_kyc_history(api, tokens, owner_conn)
    await seed_workflow_history(api, people, owner_conn)
    ids = await item_ids(api, tokens)
    window = SIZES[size]
    audit = Audit(casework.url)

    def opened() -> AbstractAsyncContextManager[tuple[BrowserContext, Watch]]:
        return console_context(
            browser, casework.url, viewport=window.viewport, device_scale_factor=window.scale
        )

    async with opened() as (context, _):
        page = await open_console(context, casework.url)
        token = page.get_by_role("textbox", name="Token")
        sign = page.get_by_role("button", name="Sign in")
        await check(page, audit, size, "sign-in", token, sign)
        await token.fill(tokens.rita)
        await sign.click()
        await expect(page.get_by_role("status", name="Connection")).to_have_text(
            "Live", timeout=SHOWN_WITHIN_MS
        )
        queue = page.get_by_role("link", name="kyc", exact=True)
        await check(
            page,
            audit,
            size,
            "queues",
            queue,
            section(page, "Exceptions"),
            page.get_by_role("button", name="Keyboard shortcuts"),
            page.get_by_role("button", name="Sign out"),
        )
        await page.get_by_role("button", name="Keyboard shortcuts").click()
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await expect(dialog).to_be_in_viewport(ratio=1)
        await dialog.get_by_role("button", name="Close").click()

        # The reviewer's whole flow, pressed as a person would at this size.
        await queue.click()
        await page.get_by_role("button", name="Claim next").click()
        await expect(page.get_by_role("article", name="Item W-1")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        decision = page.get_by_role("region", name="Decision")
        reason = decision.get_by_role("combobox", name="Reason", exact=True)
        note = decision.get_by_role("textbox", name="Decision note")
        submit = decision.get_by_role("button", name="Submit decision")
        await check(
            page,
            audit,
            size,
            "reviewer",
            page.get_by_role("button", name="Renew lease"),
            page.get_by_role("button", name="Release"),
            *(decision.get_by_role("button", name=v) for v in ("Approve", "Reject", "Escalate")),
            reason,
            note,
            submit,
            page.get_by_role("textbox", name="Note", exact=True),
            page.get_by_role("button", name="Add note"),
        )
        await reason.select_option("documents_ok")
        await note.fill("Read on a small screen.")
        await submit.click()
        await expect(decision.get_by_text("Approved: Documents verified")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )

    async with opened() as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/item/{ids['W-2']}")
        now = page.get_by_role("region", name="Now")
        await expect(now.get_by_role("button", name="Assign", exact=True)).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await check(
            page,
            audit,
            size,
            "item",
            now.get_by_role("textbox", name="Reviewer"),
            now.get_by_role("textbox", name="Assign until"),
            now.get_by_role("button", name="Assign", exact=True),
            page.get_by_role("button", name="Add note"),
        )

        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        waiting = page.get_by_role("region", name="Waiting items")
        await expect(waiting.get_by_role("checkbox", name="Select W-3")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await expect(page.locator("[data-panel=capacity] [data-figure=backlog]")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await check(
            page,
            audit,
            size,
            "manager-queue",
            page.get_by_role("button", name="Refresh"),
            waiting.get_by_role("checkbox", name="Select W-3"),
            waiting.get_by_role("link", name="W-3"),
            page.get_by_role("spinbutton", name="Available reviewer minutes per day"),
        )
        await waiting.get_by_role("checkbox", name="Select W-3").check()
        await waiting.get_by_role("button", name="Hold…").click()
        hold = waiting.get_by_role("form", name="Hold")
        await assert_fits(page, f"a bulk hold ({size})")
        await assert_usable(
            hold.get_by_role("combobox", name="Hold reason"),
            hold.get_by_role("textbox", name="Hold until"),
        )

        await page.goto(f"{casework.url}/console/#/manage/workflow/supplier_onboarding")
        await expect(
            page.locator("[data-panel=now] [data-figure=open] .figure-value")
        ).to_have_text("3", timeout=SHOWN_WITHIN_MS)
        await check(
            page,
            audit,
            size,
            "manager-workflow",
            page.get_by_role("button", name="Refresh"),
            page.get_by_role("spinbutton", name="Available approver minutes per day"),
        )

        await section(page, "Exceptions").click()
        table = page.get_by_role("table", name="Exceptions")
        await expect(table.locator("tbody tr")).to_have_count(4, timeout=SHOWN_WITHIN_MS)
        filters = page.get_by_role("form", name="Filters")
        await check(
            page,
            audit,
            size,
            "exceptions",
            *(filters.get_by_role("combobox").nth(n) for n in range(2)),
            table.get_by_role("link", name="SUP-3"),
        )

    async with opened() as (context, _):
        page = await sign_in(context, casework.url, people.sam)
        await page.get_by_role("link", name="supplier-ops", exact=True).click()
        await page.get_by_role("button", name="Claim next").click()
        actions = page.get_by_role("region", name="Actions")
        await expect(actions.get_by_role("textbox", name="Value 1")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await check(
            page,
            audit,
            size,
            "exception",
            actions.get_by_role("button", name="Renew lease"),
            actions.get_by_role("textbox", name="Field 1"),
            actions.get_by_role("textbox", name="Value 1"),
            actions.get_by_role("textbox", name="Evidence references"),
            actions.get_by_role("button", name="Submit correction"),
        )
    audit.assert_clean()


@pytest.mark.parametrize("size", list(SIZES))
async def test_the_search_box_and_results_fit_the_width(
    size: str, browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=3)
    window = SIZES[size]
    audit = Audit(casework.url)
    async with console_context(
        browser, casework.url, viewport=window.viewport, device_scale_factor=window.scale
    ) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/search?queues=kyc&states=PENDING")
        table = page.get_by_role("table", name="Items found")
        await expect(table.locator("tbody tr")).to_have_count(3, timeout=SHOWN_WITHIN_MS)
        filters = page.get_by_role("form", name="Filters")
        await check(
            page,
            audit,
            size,
            "search",
            page.get_by_role("searchbox", name="Search cases"),
            filters.get_by_role("listbox", name="Queues"),
            filters.get_by_role("checkbox", name="Pending"),
            filters.get_by_role("textbox", name="Enqueued from"),
            filters.get_by_role("combobox", name="Order"),
            filters.get_by_role("button", name="Apply filters"),
            page.get_by_role("link", name="Export CSV"),
            table.get_by_role("link", name="3", exact=True),
        )
        await page.goto(f"{casework.url}/console/#/search/decisions?queues=kyc")
        await expect(page.get_by_text("No decisions match these filters.")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await check(
            page,
            audit,
            size,
            "search-decisions",
            page.get_by_role("textbox", name="Reviewer"),
            page.get_by_role("button", name="Apply filters"),
        )
    audit.assert_clean()
