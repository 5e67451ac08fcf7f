"""Keyboard focus at the console (issue 23): every stop of Tab shows a ring that stands out
from what is around it (3:1 or more) and is not hidden under the sticky header, and the
stops come in reading order, so that the reviewer's work goes claim → the item → the
decision form → submit by the keyboard alone."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import asyncpg
from playwright.async_api import Browser, Page, expect

from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    WorkflowTokens,
    console_context,
    hold_reasons,
    open_console,
    screenshot_of,
    seed_kyc_history,
    seed_workflow_history,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework

# What has focus now, and how it shows: its name as a person reads it, where it is, the
# ring (the outline's style, width, and contrast with the colour just outside the element,
# where the ring is drawn), and whether what is drawn at its centre is it (or its content).
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  const rgba = (text) => {
    const parts = (text.match(/[\\d.]+/g) || []).map(Number);
    return parts.length >= 4 ? parts.slice(0, 4) : [...parts.slice(0, 3), 1];
  };
  const luminance = ([r, g, b]) => {
    const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const style = getComputedStyle(el);
  const rect = el.getBoundingClientRect();
  // Just outside the element, where the ring is drawn: what is there, and its background.
  const gap = parseFloat(style.outlineOffset) + 1;
  const x = rect.left - gap >= 0 ? rect.left - gap : rect.right + gap;
  const there = document.elementsFromPoint(x, rect.top + rect.height / 2)
    .find((node) => node !== el && !el.contains(node));
  let behind = [255, 255, 255, 1];
  for (let node = there; node; node = node.parentElement) {
    const colour = rgba(getComputedStyle(node).backgroundColor);
    if (colour[3] >= 0.5) { behind = colour; break; }
  }
  const [a, b] = [luminance(rgba(style.outlineColor)), luminance(behind)];
  const hit = document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2);
  // Its name as read: a label, or its text without what is hidden from the reader (a key).
  const text = el.cloneNode(true);
  for (const hidden of text.querySelectorAll("[aria-hidden=true]")) hidden.remove();
  const label = el.getAttribute("aria-label") || el.labels?.[0]?.textContent
    || text.textContent || "";
  // Where it is: within its column of a workspace (the side one stays in view as the page
  // scrolls), else on the page.
  const column = el.closest(".work-side, .work-main");
  const origin = column ? column.getBoundingClientRect().top : -window.scrollY;
  return {
    name: label.trim().replace(/\\s+/g, " "),
    tag: el.tagName.toLowerCase(),
    column: column ? (column.matches(".work-side") ? "side" : "main") : null,
    top: rect.top - origin,
    left: rect.left,
    onScreen: rect.width > 0 && rect.height > 0 && rect.top >= 0 && rect.bottom <= innerHeight
      && rect.left >= 0 && rect.right <= innerWidth,
    covered: !hit || !(hit === el || el.contains(hit)),
    ring: style.outlineStyle === "none" ? 0 : parseFloat(style.outlineWidth),
    contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
  };
}"""
# Two controls this close in height are on one line.
LINE_PX = 8
# WCAG 2.2's focus appearance asks for a ring 2 px thick at 3:1.
MIN_RING_PX = 2
MIN_RING_CONTRAST = 3


@dataclass(frozen=True)
class Stop:
    name: str
    tag: str
    column: str | None
    top: float
    left: float
    on_screen: bool
    covered: bool
    ring: float
    contrast: float

    def problems(self) -> list[str]:
        found = []
        if self.ring < MIN_RING_PX:
            found.append(f"no ring ({self.ring} px)")
        if self.contrast < MIN_RING_CONTRAST:
            found.append(f"ring at {self.contrast:.2f}:1")
        if not self.on_screen:
            found.append("not on screen")
        if self.covered:
            found.append("covered")
        return found


async def focused(page: Page) -> Stop | None:
    found: dict[str, Any] | None = await page.evaluate(FOCUSED)
    if found is None:
        return None
    return Stop(
        name=found["name"],
        tag=found["tag"],
        column=found["column"],
        top=found["top"],
        left=found["left"],
        on_screen=found["onScreen"],
        covered=found["covered"],
        ring=found["ring"],
        contrast=found["contrast"],
    )


def assert_stop(stop: Stop | None, name: str) -> None:
    """Focus is on `name`, and shows it."""
    assert stop is not None, f"focus is nowhere, not on {name!r}"
    assert stop.name == name, stop
    assert not stop.problems(), (stop, stop.problems())


async def tab(page: Page, key: str = "Tab") -> Stop:
    await page.keyboard.press(key)
    stop = await focused(page)
    assert stop is not None, f"{key} left focus nowhere"
    return stop


async def tab_through(
    page: Page, *, until: str | None = None, key: str = "Tab", limit: int = 150
) -> list[Stop]:
    """Presses Tab (or `key`) until `until` has focus, or until focus leaves the page; each
    stop must show its ring, on screen and uncovered."""
    stops: list[Stop] = []
    for _ in range(limit):
        await page.keyboard.press(key)
        stop = await focused(page)
        if stop is None:
            break
        assert not stop.problems(), f"focus on {stop.name!r} ({stop.tag}): {stop.problems()}"
        stops.append(stop)
        if stop.name == until:
            break
    else:
        raise AssertionError(f"no end after {limit} stops: {[s.name for s in stops[-10:]]}")
    return stops


def names(stops: list[Stop]) -> list[str]:
    """The names of the stops, once each (a date's fields are stops of one input)."""
    return [stop.name for n, stop in enumerate(stops) if n == 0 or stops[n - 1].name != stop.name]


def assert_reading_order(stops: list[Stop]) -> None:
    """Down the item's column, then down the decision's: never back up within a column,
    and the side column only after the main one."""
    columns = [stop.column for stop in stops if stop.column]
    assert columns == sorted(columns, key=["main", "side"].index), columns
    for before, after in itertools.pairwise(stops):
        if before.column and before.column == after.column:
            above = after.top < before.top - LINE_PX
            on_the_left = abs(after.top - before.top) < LINE_PX and after.left < before.left
            assert not above, f"{after.name!r} is above {before.name!r}"
            assert not on_the_left, f"{after.name!r} is left of {before.name!r} on its line"


async def test_a_reviewer_claims_and_decides_by_keyboard_in_reading_order(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=2)
    await hold_reasons(casework.api, tokens)
    async with console_context(browser, casework.url) as (context, _):
        page = await open_console(context, casework.url)
        # The sign-in page is drawn once the server has said how one signs in
        # (GET /auth/options): focus lands on the token field then.
        await expect(page.get_by_role("textbox", name="Token")).to_be_focused(
            timeout=SHOWN_WITHIN_MS
        )
        assert_stop(await focused(page), "Token")
        assert (await tab(page)).name == "Sign in"
        assert (await tab(page, "Shift+Tab")).name == "Token"
        await page.keyboard.type(tokens.rita)
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("status", name="Connection")).to_have_text(
            "Live", timeout=SHOWN_WITHIN_MS
        )

        # The first stop skips the header: to the page, whose first link is the queue.
        await expect(page.get_by_role("link", name="kyc", exact=True)).to_be_visible()
        assert_stop(await tab(page), "Skip to content")
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("main")).to_be_focused()
        assert (await tab(page)).name == "kyc"
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        # A new page takes focus: the next Tab starts in it, not in the header.
        assert names(await tab_through(page, until="Claim next")) == ["Queues", "Claim next"]
        await page.keyboard.press("Enter")
        item = page.get_by_role("article", name="Item demo-0001")
        await expect(item).to_be_focused(timeout=SHOWN_WITHIN_MS)

        # Down the item, then down the decision form to its submit button.
        stops = await tab_through(page, until="Submit decision")
        assert names(stops) == [
            "1",  # the item's own page
            "Show raw JSON",
            "Note",
            "Add note",
            "Renew lease",
            "Release",
            "Approve",
            "Reject",
            "Escalate",
            "Reason",
            "Decision note",
            "Submit decision",
        ]
        assert_reading_order(stops)
        # The rest of the page: the hold, then out of the page.
        rest = await tab_through(page)
        assert names(rest) == ["Hold reason", "Hold until", "Hold"]
        assert_reading_order(stops + rest)

        # Back to the reason: the first one (an approving one) chooses Approve.
        await page.get_by_role("button", name="Submit decision").focus()
        assert (await tab(page, "Shift+Tab")).name == "Decision note"
        assert (await tab(page, "Shift+Tab")).name == "Reason"
        await page.keyboard.press("ArrowDown")
        decision = page.get_by_role("region", name="Decision")
        await expect(decision.get_by_role("combobox", name="Reason")).to_have_value("documents_ok")
        await expect(decision.get_by_role("button", name="Approve")).to_have_attribute(
            "aria-pressed", "true"
        )
        assert (await tab(page)).name == "Decision note"
        await page.keyboard.type("Decided without a mouse.")
        assert_stop(await tab(page), "Submit decision")
        await screenshot_of(decision, "focus")
        await page.keyboard.press("Enter")
        await expect(decision.get_by_text("Approved: Documents verified")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        # The next item is one Enter away.
        assert_stop(await focused(page), "Claim next")

        # The shortcuts open in a dialog that holds focus, and give it back when closed.
        await page.keyboard.press("?")
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await expect(dialog.get_by_role("button", name="Close")).to_be_focused()
        assert_stop(await focused(page), "Close")
        await page.keyboard.press("Escape")
        await expect(page.get_by_role("button", name="Claim next")).to_be_focused()
    item_state = await casework.api.call(
        tokens.admin, '{ queue(name: "kyc") { items { edges { node { externalKey state } } } } }'
    )
    states = {
        edge["node"]["externalKey"]: edge["node"]["state"]
        for edge in item_state["queue"]["items"]["edges"]
    }
    assert states["demo-0001"] == "DECIDED"


async def test_every_stop_of_the_other_pages_shows_its_ring_uncovered(
    browser: Browser,
    casework: Casework,
    tokens: ConsoleTokens,
    people: WorkflowTokens,
    owner_conn: asyncpg.Connection,
) -> None:
    """Forwards through each page, and backwards through the longest (where a sticky
    header would hide what focus scrolls up to)."""
    await seed_kyc_history(casework.api, tokens, owner_conn)
    await seed_workflow_history(casework.api, people, owner_conn)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        for address, shown in (
            ("#/manage", page.get_by_role("list", name="Workflows")),
            ("#/manage/queue/kyc", page.get_by_role("table", name="Waiting items")),
            ("#/manage/workflow/supplier_onboarding", page.get_by_role("table", name="Reasons")),
            ("#/exceptions", page.get_by_role("table", name="Exceptions")),
            ("#/item/1", page.get_by_role("region", name="Decisions")),
        ):
            await page.goto(f"{casework.url}/console/{address}")
            await expect(shown).to_be_visible(timeout=SHOWN_WITHIN_MS)
            # Everything read: nothing still loading moves the page under the keyboard.
            await expect(page.locator(".loading")).to_have_count(0, timeout=SHOWN_WITHIN_MS)
            stops = await tab_through(page)
            assert len(stops) > 3, (address, names(stops))
            if address == "#/manage/queue/kyc":
                back = await tab_through(page, key="Shift+Tab")
                assert len(back) >= len(stops), (names(back), names(stops))
                # The list is drawn again when the queue changes: focus stays where it was.
                box = page.get_by_role("checkbox", name="Select W-3")
                await box.focus()
                await casework.api.enqueue(tokens.integration, "kyc", {"W-4": {"n": 4}})
                await expect(page.get_by_role("checkbox", name="Select W-4")).to_be_visible(
                    timeout=SHOWN_WITHIN_MS
                )
                await expect(box).to_be_focused()
                assert (await tab(page)).name == "W-3"
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.sam)
        await page.get_by_role("link", name="supplier-ops", exact=True).click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        await page.keyboard.press("n")
        actions = page.get_by_role("region", name="Actions")
        await expect(actions.get_by_role("button", name="Submit correction")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await expect(page.locator(".loading")).to_have_count(0, timeout=SHOWN_WITHIN_MS)
        stops = await tab_through(page)
        assert "Submit correction" in names(stops)
