"""The lease on screen: a lease that runs out, or that someone else takes and decides on,
shows "Lease lost" at once and disables the decision; a dropped socket shows that it is
reconnecting, and once back the page reads again what it missed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import asyncpg
from playwright.async_api import Browser, Page, WebSocketRoute, expect

from tests.api.helpers import CLAIM
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

VERDICT_BUTTONS = ("Approve", "Reject", "Escalate")
# Moves a lease into the past, as if its TTL had run out, without waiting for it.
EXPIRE_LEASE = (
    "UPDATE review_items SET lease_expires_at = now() - interval '1 second' WHERE id = $1"
)


async def claim_first(page: Page) -> None:
    await page.get_by_role("link", name="kyc", exact=True).click()
    await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name="Item demo-0001")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )


@dataclass
class DroppableSockets:
    """The page's GraphQL sockets, routed through Playwright so that a test can take the
    server away (every socket closes, and a new one fails to connect) and bring it back."""

    routes: list[WebSocketRoute] = field(default_factory=list)
    down: asyncio.Event = field(default_factory=asyncio.Event)

    async def route(self, socket: WebSocketRoute) -> None:
        if self.down.is_set():
            # The server is "away": the page's connection attempt fails.
            await socket.close(code=1012, reason="test: server restarting")
            return
        socket.connect_to_server()
        self.routes.append(socket)

    async def drop(self) -> None:
        self.down.set()
        for socket in self.routes:
            await socket.close(code=1012, reason="test: server restarting")

    def restore(self) -> None:
        self.down.clear()


@asynccontextmanager
async def droppable_console(
    browser: Browser, casework: Casework, token: str
) -> AsyncIterator[tuple[Page, DroppableSockets]]:
    """A console signed in with `token`, its sockets droppable, demo-0001 claimed."""
    sockets = DroppableSockets()
    async with console_context(browser, casework.url) as (context, _):
        await context.route_web_socket("**/graphql", sockets.route)
        page = await sign_in(context, casework.url, token)
        await claim_first(page)
        yield page, sockets


async def assert_decision_disabled(page: Page) -> None:
    for name in VERDICT_BUTTONS:
        await expect(page.get_by_role("button", name=name)).to_be_disabled()
    await expect(page.get_by_role("combobox", name="Reason")).to_be_disabled()
    await expect(page.get_by_role("button", name="Renew lease")).to_be_disabled()


async def test_an_expired_lease_shows_lease_lost_and_nothing_is_submitted(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=1, ttl=3)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await claim_first(page)
        await expect(page.get_by_role("status", name="Lease")).to_contain_text("left")
        # Chosen before the end: Enter after it must send nothing.
        await page.keyboard.press("a")
        lost = page.get_by_role("alert").filter(has_text="Lease lost")
        await expect(lost).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await assert_decision_disabled(page)
        await page.keyboard.press("Enter")
        await screenshot(page, "lease-lost")
    item = (await items_by_key(casework.api, tokens.admin))["demo-0001"]
    decided = (await casework.api.call(tokens.admin, ITEM_DECISIONS, id=item["id"]))["item"]
    assert decided == {"state": "PENDING", "currentDecision": None}


async def test_a_decision_by_someone_else_shows_lease_lost(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    await setup_kyc(casework.api, tokens, items=1)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await claim_first(page)
        item = (await items_by_key(casework.api, tokens.admin))["demo-0001"]
        await owner_conn.execute(EXPIRE_LEASE, int(item["id"]))
        # Rob claims the lapsed item and decides it; rita's page hears it over itemUpdates
        # (its own countdown still shows minutes left).
        claim = await casework.api.claim(tokens.rob, "kyc")
        assert claim["item"]["id"] == item["id"]
        await casework.api.decide(tokens.rob, claim)
        lost = page.get_by_role("alert").filter(has_text="Lease lost")
        await expect(lost).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await expect(lost).to_contain_text("rob")
        await assert_decision_disabled(page)
    decided = (await casework.api.call(tokens.admin, ITEM_DECISIONS, id=item["id"]))["item"]
    assert decided["currentDecision"]["reviewer"] == "rob"


async def test_a_dropped_socket_shows_reconnecting_then_reads_again(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    await setup_kyc(casework.api, tokens, items=3)
    async with droppable_console(browser, casework, tokens.rita) as (page, sockets):
        pending = page.locator("[data-figure=pending] dd")
        await expect(pending).to_have_text("2")

        await sockets.drop()
        reconnecting = page.get_by_role("status").filter(has_text="Reconnecting")
        await expect(reconnecting.first).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await screenshot(page, "reconnecting")

        # While the page is away: two new items, and its lease is taken over.
        await casework.api.enqueue(
            tokens.integration, "kyc", {"late-1": {"n": 1}, "late-2": {"n": 2}}, priority=0
        )
        item = (await items_by_key(casework.api, tokens.admin))["demo-0001"]
        await owner_conn.execute(EXPIRE_LEASE, int(item["id"]))
        taken = (await casework.api.call(tokens.rob, CLAIM, queue="kyc"))["claimNext"]
        assert taken["item"]["id"] == item["id"]
        await expect(pending).to_have_text("2")

        sockets.restore()
        await expect(page.get_by_role("status", name="Connection")).to_have_text(
            "Live", timeout=SHOWN_WITHIN_MS
        )
        await expect(reconnecting).to_have_count(0)
        # The backlog snapshot after the reconnect (the 2 pending and the 2 new ones), and
        # the item read again: rob holds it now.
        await expect(pending).to_have_text("4")
        lost = page.get_by_role("alert").filter(has_text="Lease lost")
        await expect(lost).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await assert_decision_disabled(page)


async def test_a_lease_found_gone_says_who_decided_the_item_once_they_have(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    """The page learns of a lost lease before anyone else has the item (here: after a
    reconnect, its lease ran out meanwhile): it says so, keeps listening, and names the
    reviewer who then decides the item."""
    await setup_kyc(casework.api, tokens, items=1)
    async with droppable_console(browser, casework, tokens.rita) as (page, sockets):
        item = (await items_by_key(casework.api, tokens.admin))["demo-0001"]
        await sockets.drop()
        await expect(
            page.get_by_role("status").filter(has_text="Reconnecting").first
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await owner_conn.execute(EXPIRE_LEASE, int(item["id"]))
        sockets.restore()

        lost = page.get_by_role("alert").filter(has_text="Lease lost")
        await expect(lost).to_contain_text("expired or the item moved on", timeout=SHOWN_WITHIN_MS)
        await assert_decision_disabled(page)
        claim = await casework.api.claim(tokens.rob, "kyc")
        assert claim["item"]["id"] == item["id"]
        await casework.api.decide(tokens.rob, claim)

        await expect(lost).to_contain_text("rob", timeout=SHOWN_WITHIN_MS)
        await assert_decision_disabled(page)
