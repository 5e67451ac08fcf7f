"""Finding a case at the console (issue 30): the header's search box (`/` focuses it; an id
or an external key opens the item, anything else the results), the results pages with every
filter as a control and the search in the address, paging by keyset, the refusals shown
where they belong, and the CSV export of the same search, each checked against the API."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from playwright.async_api import Browser, Page, expect

from tests.api.helpers import DECIDE, decision_input
from tests.console.accessibility import Audit
from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    application,
    console_context,
    screenshot,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Api, Casework

# More kyc items than one page of the console's results holds (50).
KYC_ITEMS = 65
# Decided in kyc, by rita: key → (verdict, reason).
DECIDED = {
    "app-0002": ("APPROVE", "documents_ok"),
    "app-0004": ("REJECT", "name_mismatch"),
    "app-0006": ("APPROVE", "documents_ok"),
}
SEARCH_ITEMS = """
query($filter: ItemSearch!, $after: String) {
  items(filter: $filter, first: 200, after: $after) {
    __typename
    ... on ItemConnection {
      edges { node { id queue externalKey state currentDecision { verdict reasonCode reviewer } } }
      pageInfo { hasNextPage endCursor }
    }
    ... on InvalidInput { field message }
  }
}
"""


async def seed(api: Api, tokens: ConsoleTokens) -> dict[str, str]:
    """kyc with KYC_ITEMS applications (app-0001 …), DECIDED decided by rita; payouts with
    two items, one under a key kyc has too (app-0007). Returns kyc's item ids by key."""
    await setup_kyc(api, tokens, items=0)
    await api.configure_queue(tokens.admin, "payouts")
    # The ones to decide first, above the rest: the claims below take them, in this order.
    first = {key: application(int(key[-4:])) for key in DECIDED}
    rest = {
        f"app-{n:04d}": application(n)
        for n in range(1, KYC_ITEMS + 1)
        if f"app-{n:04d}" not in DECIDED
    }
    enqueued = await api.enqueue(tokens.integration, "kyc", first, priority=99)
    enqueued += await api.enqueue(tokens.integration, "kyc", rest)
    # An answer lists the items in the order they were sent.
    ids = {key: item["id"] for key, item in zip([*first, *rest], enqueued, strict=True)}
    await api.enqueue(
        tokens.integration, "payouts", {"app-0007": {"amount": 120}, "po-1": {"amount": 9}}
    )
    for key, (verdict, reason) in DECIDED.items():
        claim = await api.claim(tokens.rita, "kyc")
        assert claim["item"]["id"] == ids[key], (key, claim)
        decided = await api.call(tokens.rita, DECIDE, input=decision_input(claim, verdict, reason))
        assert decided["submitDecision"]["__typename"] == "DecisionRecorded", decided
    return ids


SEARCH_DECISIONS = """
query($filter: DecisionSearch!, $after: String) {
  decisions(filter: $filter, first: 200, after: $after) {
    __typename
    ... on DecisionConnection {
      edges { node { id verdict reasonCode reviewer item { id } } }
      pageInfo { hasNextPage endCursor }
    }
    ... on InvalidInput { field message }
  }
}
"""
# Items that no search of a few filters can bound: the scan limit's worth and one more,
# written in one statement (the API would take minutes).
BULK_ITEMS = """
INSERT INTO review_items (queue, origin_queue, external_key, payload, evidence_hash, priority)
SELECT 'bulk', 'bulk', 'bulk-' || n, '{}'::jsonb, repeat('0', 64), 0
FROM generate_series(1, $1::int) AS n
"""


# Each search's document, and the connection a page of it answers.
API_SEARCHES = {
    "items": (SEARCH_ITEMS, "ItemConnection"),
    "decisions": (SEARCH_DECISIONS, "DecisionConnection"),
}


async def api_found(
    api: Api, token: str, kind: str, search: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every item or decision (`kind`) the API finds for `search`, in its order (all pages)."""
    document, connection = API_SEARCHES[kind]
    found: list[dict[str, Any]] = []
    after = None
    while True:
        page = (await api.call(token, document, filter=search, after=after))[kind]
        assert page["__typename"] == connection, page
        found.extend(edge["node"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


def shown_range(first: int, last: int) -> str:
    """How the page says which rows it shows: "Items 51 to 62", with an en dash."""
    return f"Items {first}\u2013{last}"


async def shown_rows(page: Page, table_name: str = "Items found") -> list[str]:
    """The ids of the rows the results table shows, in order."""
    table = page.get_by_role("table", name=table_name)
    await expect(table).to_be_visible(timeout=SHOWN_WITHIN_MS)
    return await table.locator("tbody tr").evaluate_all("(rows) => rows.map((r) => r.dataset.row)")


def hash_params(page: Page) -> list[tuple[str, str]]:
    fragment = urlsplit(page.url).fragment
    return parse_qsl(fragment.partition("?")[2])


async def search_for(page: Page, text: str) -> None:
    """`/` from the page, the text typed in the box, Enter."""
    await page.locator("main").click(position={"x": 5, "y": 5})
    await page.keyboard.press("/")
    box = page.get_by_role("searchbox", name="Search cases")
    await expect(box).to_be_focused()
    await page.keyboard.type(text)
    await page.keyboard.press("Enter")


async def test_slash_focuses_the_box_and_an_id_or_a_key_opens_the_item(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    ids = await seed(casework.api, tokens)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        # An external key: the item's own page.
        await search_for(page, "app-0012")
        await expect(page).to_have_url(re.compile(rf"#/item/{ids['app-0012']}$"))
        await expect(page.get_by_role("heading", name="Item app-0012", level=1)).to_be_visible()
        # In a text box, `/` is text.
        note = page.get_by_role("textbox", name="Note", exact=True)
        await note.click()
        await page.keyboard.type("a/b")
        await expect(note).to_have_value("a/b")
        await expect(page.get_by_role("searchbox", name="Search cases")).not_to_be_focused()

        # An id: the item with that id.
        await search_for(page, ids["app-0031"])
        await expect(page).to_have_url(re.compile(rf"#/item/{ids['app-0031']}$"))
        await expect(page.get_by_role("heading", name="Item app-0031", level=1)).to_be_visible()

        # A key in two queues: both items, and the queues named.
        await search_for(page, "app-0007")
        await expect(page.get_by_role("status").filter(has_text="kyc, payouts")).to_be_visible()
        assert dict(hash_params(page)) == {"externalKeyPrefix": "app-0007", "q": "app-0007"}
        assert len(await shown_rows(page)) == 2

        # Nothing by that name: the results, saying so.
        await search_for(page, "app-9")
        await expect(page.get_by_text("Nothing matched “app-9” exactly")).to_be_visible()
        assert dict(hash_params(page)) == {"externalKeyPrefix": "app-9", "q": "app-9"}
        await expect(page.get_by_text("No items match these filters.")).to_be_visible()
        await expect(page.get_by_role("searchbox", name="Search cases")).to_have_value("app-9")

        # The shortcut is listed.
        await page.locator("main").click(position={"x": 5, "y": 5})
        await page.keyboard.press("?")
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await expect(dialog.get_by_text("Search cases", exact=False)).to_be_visible()


async def test_filters_pages_and_the_address_show_exactly_the_api_rows(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await seed(api, tokens)
    pending_in_kyc = await api_found(
        api, tokens.manager, "items", {"queues": ["kyc"], "states": ["PENDING"]}
    )
    assert len(pending_in_kyc) == KYC_ITEMS - len(DECIDED)
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/search")
        filters = page.get_by_role("form", name="Filters")
        await filters.get_by_role("listbox", name="Queues").select_option(["kyc"])
        await filters.get_by_role("checkbox", name="Pending").check()
        await filters.get_by_role("button", name="Apply filters").click()
        await expect(page).to_have_url(re.compile(r"#/search\?queues=kyc&states=PENDING$"))

        # Page by page, forwards: every row once, in the API's order.
        first = await shown_rows(page)
        assert first == [item["id"] for item in pending_in_kyc[:50]]
        await audit(page, "search results")
        await screenshot(page, "search-results", full_page=False)
        await expect(page.get_by_role("button", name="Previous page")).to_be_disabled()
        await page.get_by_role("button", name="Next page").click()
        await expect(page.get_by_text(shown_range(51, len(pending_in_kyc)))).to_be_visible()
        second = await shown_rows(page)
        assert first + second == [item["id"] for item in pending_in_kyc]
        await expect(page.get_by_role("button", name="Next page")).to_be_disabled()
        page_two = page.url

        # Backwards, by the button and by the browser.
        await page.get_by_role("button", name="Previous page").click()
        await expect(page.get_by_text(shown_range(1, 50))).to_be_visible()
        assert await shown_rows(page) == first
        await page.go_back()
        await expect(page.get_by_text(shown_range(51, len(pending_in_kyc)))).to_be_visible()
        assert await shown_rows(page) == second

        # The address alone, in another tab: signed in there, the same controls and rows.
        other = await context.new_page()
        await other.goto(page_two)
        await other.get_by_role("textbox", name="Token").fill(tokens.manager)
        await other.get_by_role("button", name="Sign in").click()
        await expect(other.get_by_text(shown_range(51, len(pending_in_kyc)))).to_be_visible()
        assert await shown_rows(other) == second
        restored = other.get_by_role("form", name="Filters")
        await expect(restored.get_by_role("checkbox", name="Pending")).to_be_checked()
        await expect(restored.get_by_role("checkbox", name="Decided")).not_to_be_checked()
        chosen = await restored.get_by_role("listbox", name="Queues").evaluate(
            "(s) => [...s.selectedOptions].map((o) => o.value)"
        )
        assert chosen == ["kyc"]

        # A decision filter: the decided ones, with their current decisions shown.
        await other.goto(f"{casework.url}/console/#/search?states=DECIDED&verdict=APPROVE")
        decided = {"states": ["DECIDED"], "verdict": "APPROVE"}
        approved = await api_found(api, tokens.manager, "items", decided)
        assert {item["externalKey"] for item in approved} == {"app-0002", "app-0006"}
        assert await shown_rows(other) == [item["id"] for item in approved]
        row = other.get_by_role("table", name="Items found").locator("tbody tr").first
        await expect(row).to_contain_text("Approved")
        await expect(row).to_contain_text("documents_ok")
        await expect(row).to_contain_text("by rita")
        await audit(other, "search results, a decision filter")
    audit.assert_clean()


async def test_refusals_are_shown_beside_the_filters(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await seed(casework.api, tokens)
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        # Not a number: caught in the page, nothing sent.
        await page.goto(f"{casework.url}/console/#/search?priorityAtLeast=high")
        least = page.get_by_role("textbox", name="Priority at least")
        await expect(least).to_have_attribute("aria-invalid", "true")
        await expect(least).to_have_accessible_description(re.compile("write a whole number"))
        await expect(page.get_by_role("table", name="Items found")).to_have_count(0)

        # Refused by the API: the field it names is marked with its message.
        await page.goto(f"{casework.url}/console/#/search?priorityAtLeast=10&priorityAtMost=5")
        marked = page.locator(".search-field.is-invalid")
        await expect(marked).to_have_count(1)
        field = await marked.get_attribute("data-field")
        assert field in ("priorityAtLeast", "priorityAtMost")
        await expect(page.get_by_role("alert")).to_contain_text("A filter was not accepted")
        await audit(page, "search refused")
    audit.assert_clean()


async def downloaded(page: Page, link_name: str = "Export CSV") -> list[dict[str, str]]:
    """Clicks the export link, takes the file the browser saves, and reads it as CSV."""
    async with page.expect_download() as started:
        await page.get_by_role("link", name=link_name).click()
    download = await started.value
    assert download.suggested_filename.endswith(".csv"), download.suggested_filename
    path = await download.path()
    text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


async def test_decisions_and_the_csv_export_hold_the_api_rows(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await seed(api, tokens)
    pending = await api_found(
        api, tokens.manager, "items", {"queues": ["kyc"], "states": ["PENDING"]}
    )
    by_rita = await api_found(
        api, tokens.manager, "decisions", {"reviewer": "rita", "verdict": "APPROVE"}
    )
    assert len(by_rita) == 2
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/search?queues=kyc&states=PENDING")
        link = page.get_by_role("link", name="Export CSV")
        await expect(link).to_have_attribute("href", "/export/items.csv?queues=kyc&states=PENDING")
        await shown_rows(page)
        rows = await downloaded(page)
        assert [row["Item ID"] for row in rows] == [item["id"] for item in pending]
        assert [row["External key"] for row in rows] == [item["externalKey"] for item in pending]
        assert {row["State"] for row in rows} == {"PENDING"}
        await expect(page.get_by_text("The CSV is downloaded.")).to_be_visible()

        # Decisions: by the controls, then the same search of items one link away.
        await (
            page.get_by_role("navigation", name="Search for")
            .get_by_role("link", name="Decisions")
            .click()
        )
        filters = page.get_by_role("form", name="Filters")
        await filters.get_by_role("textbox", name="Reviewer").fill("rita")
        await filters.get_by_role("combobox", name="Verdict").select_option("APPROVE")
        await filters.get_by_role("button", name="Apply filters").click()
        await expect(page).to_have_url(
            re.compile(r"#/search/decisions\?queues=kyc&reviewer=rita&verdict=APPROVE$")
        )
        shown = await shown_rows(page, "Decisions found")
        assert shown == [
            d["id"]
            for d in await api_found(
                api,
                tokens.manager,
                "decisions",
                {"queues": ["kyc"], "reviewer": "rita", "verdict": "APPROVE"},
            )
        ]
        assert shown == [decision["id"] for decision in by_rita]
        await audit(page, "decisions found")
        await screenshot(page, "search-decisions")
        exported = await downloaded(page)
        assert [row["Decision ID"] for row in exported] == shown
        assert {row["Reviewer"] for row in exported} == {"rita"}

        await (
            page.get_by_role("navigation", name="Search for")
            .get_by_role("link", name="Items")
            .click()
        )
        await expect(page).to_have_url(
            re.compile(r"#/search\?queues=kyc&decidedBy=rita&verdict=APPROVE$")
        )
        await expect(page.get_by_role("combobox", name="Verdict")).to_have_value("APPROVE")
        assert len(await shown_rows(page)) == 2

    # A reviewer finds cases too, but has nothing to export.
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await page.goto(f"{casework.url}/console/#/search?queues=kyc&states=DECIDED")
        assert len(await shown_rows(page)) == len(DECIDED)
        await expect(page.get_by_role("link", name="Export CSV")).to_have_count(0)
    audit.assert_clean()


async def test_a_search_too_broad_marks_the_filters_that_would_narrow_it(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: Any
) -> None:
    await casework.api.configure_queue(tokens.admin, "bulk")
    assert await owner_conn.execute(BULK_ITEMS, 50_001) == "INSERT 0 50001"
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        # No index bounds a priority alone: the walk of the activity order reads past the
        # scan limit without a match.
        await page.goto(f"{casework.url}/console/#/search?priorityAtLeast=1000")
        alert = page.get_by_role("alert")
        await expect(alert).to_contain_text("This search is too broad", timeout=30_000)
        await expect(alert).to_contain_text("50,000")
        queues = page.get_by_role("listbox", name="Queues")
        await expect(queues).to_have_accessible_description(re.compile("Narrow the search here"))
        await expect(page.locator(".search-field.is-suggested").first).to_have_attribute(
            "data-field", "queues"
        )
        await expect(page.get_by_role("table", name="Items found")).to_have_count(0)
        await audit(page, "search too broad")
        await screenshot(page, "search-too-broad")
    audit.assert_clean()
