"""The claim controls at the console (issue 14): a reviewer holds a claimed item for a
reason until a time, takes leases up again after a reload or at the lease limit, and hears
at once when a manager took an item back; a manager assigns, unassigns, revokes and
resumes from the item's page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from playwright.async_api import Browser, Page, expect

from tests.console.helpers import (
    ITEM_DECISIONS,
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    application,
    console_context,
    hold_reasons,
    item_controls,
    item_ids,
    screenshot,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Casework

# The console's possessive, as a reader sees it.
APOSTROPHE = "\N{RIGHT SINGLE QUOTATION MARK}"
DUE_IN_AN_HOUR = """
mutation { configureQueue(input: {name: "kyc", dueSeconds: 3600}) { __typename } }
"""
# The item's due time passed an hour ago, without waiting for it.
MAKE_OVERDUE = "UPDATE review_items SET due_at = now() - interval '1 hour' WHERE id = $1"
LEASE_LIMIT = """
mutation($limit: Int!) {
  configureQueue(input: {name: "kyc", maxLeasesPerReviewer: $limit}) {
    __typename ... on Error { message }
  }
}
"""
REVOKE = """
mutation($itemId: ID!, $reason: String!) {
  revokeLease(input: {itemId: $itemId, reason: $reason}) {
    __typename ... on Error { message }
  }
}
"""
HOLD = """
mutation($input: HoldItemInput!) { holdItem(input: $input) { __typename ... on Error { message } } }
"""
# The hold ends now, as if its time had come, without waiting for it.
END_HOLD_NOW = "UPDATE review_items SET held_until = now() - interval '1 second' WHERE id = $1"


async def open_queue(page: Page) -> None:
    await page.get_by_role("link", name="kyc", exact=True).click()
    await expect(page.get_by_role("button", name="Claim next")).to_be_enabled(
        timeout=SHOWN_WITHIN_MS
    )


async def claim_next(page: Page, key: str) -> None:
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )


async def open_item(page: Page, origin: str, item_id: str) -> None:
    await page.goto(f"{origin}/console/#/item/{item_id}")
    await expect(page.get_by_role("region", name="Now")).to_be_visible(timeout=SHOWN_WITHIN_MS)


def lease_alert(page: Page) -> Any:
    return page.get_by_role("region", name="Your lease").get_by_role("alert")


async def test_a_held_item_leaves_the_reviewer_and_comes_back_when_its_hold_ends(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=0)
    due = await api.call(tokens.admin, DUE_IN_AN_HOUR)
    assert due["configureQueue"]["__typename"] == "QueueConfigured", due
    await api.enqueue(tokens.integration, "kyc", {"demo-0001": application(1)}, priority=99)
    await hold_reasons(api, tokens)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await open_queue(page)
        await claim_next(page, "demo-0001")
        card = page.get_by_role("article", name="Item demo-0001")
        await expect(card.locator('[data-fact="due"]')).to_contain_text("in 59 min")
        await expect(card.get_by_text("Overdue", exact=True)).to_have_count(0)
        hold = page.get_by_role("form", name="Hold")
        await hold.get_by_role("combobox", name="Hold reason").select_option("awaiting_customer")
        await hold.get_by_role("textbox", name="Hold until").fill(
            (datetime.now() + timedelta(days=2)).strftime("%Y-%m-%dT09:30")
        )
        await screenshot(page, "hold")
        await hold.get_by_role("button", name="Hold", exact=True).click()
        await expect(hold.get_by_role("status")).to_contain_text(
            "On hold: Waiting for the customer", timeout=SHOWN_WITHIN_MS
        )
        # Out of her hands, like a release: no action needs the lease any more.
        lease = page.get_by_role("region", name="Your lease")
        await expect(lease.get_by_role("status", name="Lease")).to_contain_text("On hold")
        await expect(lease.get_by_role("button", name="Renew lease")).to_be_disabled()
        await expect(page.get_by_role("button", name="Approve")).to_be_disabled()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()

        item_id = (await item_ids(api, tokens))["demo-0001"]
        held = await item_controls(api, tokens.admin, item_id)
        assert held["state"] == "PENDING"
        assert held["lease"] is None
        assert held["hold"]["reason"] == "awaiting_customer"
        assert held["events"][-1] == {
            "kind": "HELD",
            "actor": "rita",
            "body": None,
            "holdReason": "awaiting_customer",
            "assignee": None,
        }
        # While it waits, nothing is there to claim.
        await page.keyboard.press("n")
        await expect(
            page.get_by_role("heading", name="Nothing to claim in kyc right now")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)

        # Its time comes (moved in SQL): the next claim takes it again, its story says why.
        assert await owner_conn.execute(END_HOLD_NOW, int(item_id)) == "UPDATE 1"
        assert await owner_conn.execute(MAKE_OVERDUE, int(item_id)) == "UPDATE 1"
        await claim_next(page, "demo-0001")
        await expect(card.get_by_text("Overdue", exact=True)).to_be_visible()
        activity = page.get_by_role("region", name="Activity")
        await expect(
            activity.get_by_role("listitem").filter(has_text="rita held it")
        ).to_contain_text("rita held it: awaiting_customer, until", timeout=SHOWN_WITHIN_MS)
        await page.keyboard.press("a")
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible()
    decided = (await api.call(tokens.admin, ITEM_DECISIONS, id=item_id))["item"]
    assert decided["currentDecision"]["reviewer"] == "rita"


async def test_a_reloaded_tab_resumes_its_leases_and_the_lease_limit_offers_them(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=3)
    limited = await api.call(tokens.admin, LEASE_LIMIT, limit=1)
    assert limited["configureQueue"]["__typename"] == "QueueConfigured", limited
    # A tab that claimed and was closed: the lease lives on, its token with the server.
    earlier = await api.claim(tokens.rita, "kyc")
    assert earlier["item"]["id"] == (await item_ids(api, tokens))["demo-0001"]
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        offer = page.get_by_text("You hold a lease from earlier.")
        await expect(offer).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await open_queue(page)
        await expect(
            page.get_by_role("heading", name="You hold a lease here from earlier")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        # Claiming more is refused at the limit, with the leases held to take up again.
        await page.keyboard.press("n")
        await expect(
            page.get_by_role(
                "heading", name="You hold 1 lease here already: the most this queue allows."
            )
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        held = page.get_by_role("list", name="Your leases").get_by_role("listitem")
        await expect(held).to_have_count(1)
        await expect(held).to_contain_text("demo-0001")
        await screenshot(page, "lease-limit")
        await held.get_by_role("button", name="Resume demo-0001").click()
        await expect(page.get_by_role("article", name="Item demo-0001")).to_be_visible()
        lease = page.get_by_role("region", name="Your lease")
        await expect(lease.get_by_role("status", name="Lease")).to_contain_text("left")
        # The same lease, token and all: the decision is recorded under it.
        await page.keyboard.press("a")
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await claim_next(page, "demo-0002")
    decided = (await api.call(tokens.admin, ITEM_DECISIONS, id=earlier["item"]["id"]))["item"]
    assert decided["currentDecision"]["reviewer"] == "rita"


async def test_a_revoked_lease_is_told_live_as_a_manager_taking_the_item_back(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=1)
    await hold_reasons(api, tokens)
    async with (
        console_context(browser, casework.url) as (rob_context, _),
        console_context(browser, casework.url) as (max_context, _),
    ):
        page = await sign_in(rob_context, casework.url, tokens.rob)
        await open_queue(page)
        await claim_next(page, "demo-0001")
        item_id = (await item_ids(api, tokens))["demo-0001"]

        manager = await sign_in(max_context, casework.url, tokens.manager)
        await open_item(manager, casework.url, item_id)
        now = manager.get_by_role("region", name="Now")
        await expect(now.locator('[data-fact="holder"]')).to_contain_text("rob")
        # A revocation needs its reason: refused in words, nothing written.
        await now.get_by_role("button", name="Revoke lease").click()
        await expect(now.get_by_role("alert")).to_contain_text("Check “Revocation reason”.")
        await expect(page.get_by_role("button", name="Renew lease")).to_be_enabled()
        await now.get_by_role("textbox", name="Revocation reason").fill("Rob is off sick today.")
        await now.get_by_role("button", name="Revoke lease").click()
        await expect(now.get_by_role("status").filter(has_text="lease ended")).to_contain_text(
            f"rob{APOSTROPHE}s lease ended; the item is claimable again."
        )
        await expect(now.get_by_role("button", name="Revoke lease")).to_have_count(0)

        # Rob's page hears it over its websocket, and says who ended it and why.
        await expect(lease_alert(page)).to_contain_text(
            "A manager took this item back: Rob is off sick today.", timeout=SHOWN_WITHIN_MS
        )
        await expect(lease_alert(page)).not_to_contain_text("expired")
        await expect(page.get_by_role("button", name="Approve")).to_be_disabled()
        await expect(page.get_by_role("button", name="Hold", exact=True)).to_be_disabled()
        activity = page.get_by_role("region", name="Activity")
        await expect(activity.get_by_role("listitem").last).to_contain_text(
            f"max revoked rob{APOSTROPHE}s lease: Rob is off sick today.", timeout=SHOWN_WITHIN_MS
        )
        await screenshot(page, "lease-revoked")
    item = (await api.call(tokens.admin, ITEM_DECISIONS, id=item_id))["item"]
    assert item == {"state": "PENDING", "currentDecision": None}


async def test_a_manager_assigns_unassigns_and_resumes_from_the_items_page(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=2)
    await hold_reasons(api, tokens)
    ids = await item_ids(api, tokens)
    item_id = ids["demo-0001"]
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await open_item(page, casework.url, item_id)
        now = page.get_by_role("region", name="Now")
        await expect(now.get_by_role("button", name="Unassign")).to_have_count(0)
        await expect(now.get_by_role("button", name="Revoke lease")).to_have_count(0)
        await now.get_by_role("textbox", name="Reviewer").fill("rita")
        until = (datetime.now() + timedelta(days=1)).strftime("%Y-%m-%dT17:00")
        await now.get_by_role("textbox", name="Assign until").fill(until)
        await now.get_by_role("button", name="Assign", exact=True).click()
        await expect(now.get_by_role("status")).to_contain_text("Assigned to rita, until")
        await expect(now.locator('[data-fact="assignment"]')).to_contain_text("rita, until")
        await expect(
            page.get_by_role("region", name="Activity").get_by_role("listitem").last
        ).to_contain_text("max assigned it to rita until", timeout=SHOWN_WITHIN_MS)
        await screenshot(page, "assign")
        assigned = await item_controls(api, tokens.admin, item_id)
        assert assigned["assignment"]["reviewer"] == "rita"
        assert assigned["assignment"]["until"] is not None

        await now.get_by_role("button", name="Unassign").click()
        await expect(now.get_by_role("status")).to_contain_text("Unassigned")
        await expect(now.locator('[data-fact="assignment"]')).to_have_count(0)
        await expect(
            page.get_by_role("region", name="Activity").get_by_role("listitem").last
        ).to_contain_text(f"max ended rita{APOSTROPHE}s assignment", timeout=SHOWN_WITHIN_MS)
        assert (await item_controls(api, tokens.admin, item_id))["assignment"] is None

        # A held item (rob's, through the API) is resumed from here before its time.
        claim = await api.claim(tokens.rob, "kyc")
        assert claim["item"]["id"] == item_id
        held = await api.call(
            tokens.rob,
            HOLD,
            input={
                "itemId": item_id,
                "leaseToken": claim["leaseToken"],
                "until": (datetime.now(UTC) + timedelta(days=2)).isoformat(),
                "reason": "awaiting_bank",
            },
        )
        assert held["holdItem"]["__typename"] == "ItemHeld", held
        await expect(now.locator('[data-fact="hold"]')).to_contain_text(
            "awaiting_bank", timeout=SHOWN_WITHIN_MS
        )
        await now.get_by_role("button", name="Resume").click()
        await expect(now.get_by_role("status")).to_contain_text("Resumed")
        await expect(now.locator('[data-fact="hold"]')).to_have_count(0)
    assert (await item_controls(api, tokens.admin, item_id))["hold"] is None
