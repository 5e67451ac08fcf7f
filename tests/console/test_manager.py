"""The manager's pages show the API's own figures, and follow the queue live."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Browser, Page, expect

from tests.console.helpers import (
    QUEUE_STATS,
    SHOWN_WITHIN_MS,
    WORKFLOW_EXCEPTIONS,
    ConsoleTokens,
    WorkflowTokens,
    console_context,
    screenshot,
    section,
    setup_kyc,
    setup_workflow,
    sign_in,
)
from tests.live.helpers import Casework

COUNTS = (
    "pending",
    "leased",
    "unappliedDecisions",
    "unappliedOlderThanThreshold",
    "failedApplications",
)


def shown(page: Page, panel: str, figure: str) -> Any:
    return page.locator(f"[data-panel={panel}] [data-figure={figure}] dd")


async def stats(casework: Casework, token: str) -> dict[str, Any]:
    data = await casework.api.call(token, QUEUE_STATS, queue="kyc")
    result: dict[str, Any] = data["queue"]["stats"]
    return result


async def test_the_queue_page_shows_the_api_figures_and_follows_the_backlog(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=5)
    claims = [await api.claim(tokens.rita, "kyc") for _ in range(2)]
    await api.decide(tokens.rita, claims[0])
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await section(page, "Manage").click()
        before = await stats(casework, tokens.manager)
        await page.get_by_role("link", name="kyc", exact=True).click()
        await expect(shown(page, "now", "pending")).to_have_text(str(before["pending"]))
        after = await stats(casework, tokens.manager)
        assert {name: before[name] for name in COUNTS} == {name: after[name] for name in COUNTS}
        for name in COUNTS:
            await expect(shown(page, "now", name)).to_have_text(str(after[name]))
        # The age the page read lies between the API's reads before and after it.
        age = float(
            await shown(page, "now", "oldestPendingAgeSeconds").get_attribute("data-seconds")
            or "nan"
        )
        assert before["oldestPendingAgeSeconds"] <= age <= after["oldestPendingAgeSeconds"]
        assert (before["pending"], before["leased"]) == (3, 1)

        # The chart and the figures follow the backlog while the page is open.
        chart = page.get_by_role("img", name="Backlog of kyc since this page opened")
        await expect(chart.locator("canvas")).to_have_count(1)
        await api.enqueue(tokens.integration, "kyc", {"late-1": {"n": 1}, "late-2": {"n": 2}})
        await expect(shown(page, "now", "pending")).to_have_text("5", timeout=SHOWN_WITHIN_MS)
        await expect(
            page.get_by_role("region", name="Backlog since this page opened")
        ).to_contain_text("points")
        await screenshot(page, "manager-queue")


async def test_the_workflow_page_counts_what_the_api_lists(
    browser: Browser, casework: Casework, people: WorkflowTokens
) -> None:
    api = casework.api
    await setup_workflow(api, people, ("SUP-1", "CRITICAL"), ("SUP-2", "HIGH"), ("SUP-3", "LOW"))
    await api.claim(people.sam, "supplier-ops")
    listed = [
        edge["node"]
        for edge in (await api.call(people.manager, WORKFLOW_EXCEPTIONS))["exceptions"]["edges"]
    ]
    open_ = [e for e in listed if e["state"] != "CLOSED"]
    expected = {
        "open": len(open_),
        "needsReview": sum(e["state"] == "NEEDS_REVIEW" for e in open_),
        "awaitingApproval": sum(e["state"] == "AWAITING_APPROVAL" for e in open_),
        "overdue": sum(e["overdue"] for e in open_),
        "unclaimed": sum(e["state"] == "NEEDS_REVIEW" and e["owner"] is None for e in open_),
        "closed": len(listed) - len(open_),
    }
    assert (expected["open"], expected["unclaimed"]) == (3, 2)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.manager)
        await section(page, "Manage").click()
        await page.get_by_role("link", name="supplier_onboarding", exact=True).click()
        for name, value in expected.items():
            await expect(shown(page, "now", name)).to_have_text(str(value))
        reasons = page.get_by_role("list", name="Open exceptions by reason")
        await expect(reasons).to_contain_text("A document names another legal entity")
        await expect(reasons).to_contain_text("3")
        await screenshot(page, "manager-workflow")
