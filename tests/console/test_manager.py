"""The manager's pages show the API's own figures (Queue.stats, Queue.measures and
Workflow.measures, capacity included once the minutes are typed), follow the queue live,
and are not offered to a reviewer."""

from __future__ import annotations

from typing import Any

import asyncpg
from playwright.async_api import Browser, Locator, Page, expect

from tests.console.helpers import (
    QUEUE_MEASURES,
    QUEUE_STATS,
    SHOWN_WITHIN_MS,
    WORKFLOW_MEASURES,
    ConsoleTokens,
    WorkflowTokens,
    console_context,
    screenshot,
    section,
    seed_kyc_history,
    seed_workflow_history,
    setup_kyc,
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
CAPACITY = (
    "arrivalsPerDay",
    "handlingMinutesMean",
    "demandMinutesPerDay",
    "backlog",
    "backlogMinutesPerDay",
    "availableMinutesPerDay",
    "headroomMinutesPerDay",
)
PERCENTILES = ("p50", "p90", "p99", "max")


def shown(page: Page, panel: str, figure: str) -> Locator:
    return page.locator(f"[data-panel={panel}] [data-figure={figure}] dd.figure-value")


def raw(text: str | None) -> Any:
    """What a data-value attribute holds: the API's number, or null."""
    assert text is not None
    return None if text in ("null", "undefined") else float(text)


async def value(locator: Locator) -> Any:
    await expect(locator).to_have_count(1)
    return raw(await locator.get_attribute("data-value"))


async def figure_values(page: Page, panel: str, names: dict[str, str]) -> dict[str, Any]:
    """{API field: the data-value of the figure `names[field]` in `panel`}."""
    return {field: await value(shown(page, panel, figure)) for field, figure in names.items()}


async def bar_values(page: Page, panel: str, chart: str) -> dict[str, Any]:
    """{data-key: data-value} of the bars of the chart named `chart` in `panel`."""
    bars = page.locator(f"[data-panel={panel}]").get_by_role("list", name=chart, exact=True)
    await expect(bars).to_have_count(1)
    found = {}
    for row in await bars.locator("li").all():
        found[await row.get_attribute("data-key") or ""] = await value(row.locator(".bar-value"))
    return found


async def row_values(page: Page, panel: str, row: str, fields: tuple[str, ...]) -> dict[str, Any]:
    cells = page.locator(f"[data-panel={panel}] tr[data-row='{row}']")
    return {field: await value(cells.locator(f"[data-field={field}]")) for field in fields}


def percentiles(found: dict[str, Any]) -> dict[str, Any]:
    return {key: found[key] for key in PERCENTILES}


async def type_minutes(page: Page, panel: str, minutes: str) -> None:
    box = page.locator(f"[data-panel={panel}]").get_by_role("spinbutton", name=minutes_label(panel))
    await box.fill(minutes)


def minutes_label(panel: str) -> str:
    who = "approver" if panel == "approvalCapacity" else "reviewer"
    return f"Available {who} minutes per day"


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

        # The chart and the figures follow the backlog while the page is open, the
        # measures with them.
        chart = page.get_by_role("img", name="Backlog of kyc since this page opened")
        await expect(chart.locator("canvas")).to_have_count(1)
        await expect(shown(page, "window", "arrivals")).to_have_text("5")
        await api.enqueue(tokens.integration, "kyc", {"late-1": {"n": 1}, "late-2": {"n": 2}})
        await expect(shown(page, "now", "pending")).to_have_text("5", timeout=SHOWN_WITHIN_MS)
        await expect(shown(page, "window", "arrivals")).to_have_text("7", timeout=SHOWN_WITHIN_MS)
        await expect(
            page.get_by_role("region", name="Backlog since this page opened")
        ).to_contain_text("points")


async def test_the_queue_page_shows_the_api_measures(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await seed_kyc_history(api, tokens, owner_conn)
    read = (await api.call(tokens.manager, QUEUE_MEASURES, queue="kyc"))["queue"]
    measures = read["measures"]
    # The history's known answers, through the API.
    assert (measures["arrivals"], measures["decided"], measures["backlog"]) == (9, 6, 3)
    assert measures["leaseCountAtDecision"] == [
        {"leaseCount": 1, "items": 4},
        {"leaseCount": 2, "items": 1},
        {"leaseCount": 3, "items": 1},
    ]
    assert measures["leaseCountPending"] == [
        {"leaseCount": 0, "items": 2},
        {"leaseCount": 1, "items": 1},
    ]
    assert (measures["lapsedLeases"], measures["releasedLeases"]) == (3, 1)
    assert (measures["lapsedLeaseShare"], measures["leaseCutOffShare"]) == (0.3, 0.5)
    assert [
        (r["reviewer"], r["decided"], r["overturned"], r["lapsedLeases"])
        for r in measures["reviewers"]
    ] == [("rita", 4, 1, 1), ("rob", 2, 0, 2)]

    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        await expect(shown(page, "window", "decided")).to_have_text("6")

        window = "arrivals decided escalated overturned backlog lapsedLeases releasedLeases"
        assert await figure_values(page, "window", {f: f for f in window.split()}) == {
            f: measures[f] for f in window.split()
        }
        for chart, buckets in (
            ("Leases per item at decision", measures["leaseCountAtDecision"]),
            ("Leases per pending item", measures["leaseCountPending"]),
        ):
            assert await bar_values(page, "leaseCounts", chart) == {
                str(b["leaseCount"]): b["items"] for b in buckets
            }
        await expect(page.locator("[data-panel=leaseCounts]")).to_contain_text(
            "33.3% needed more than one lease."
        )

        mix = page.locator("[data-panel=reasonMix] tbody tr")
        await expect(mix).to_have_count(len(measures["reasons"]))
        for n, reason in enumerate(measures["reasons"]):
            row = f"{reason['code']}:{reason['verdict']}"
            assert await mix.nth(n).get_attribute("data-row") == row
            assert await row_values(page, "reasonMix", row, ("count", "share")) == {
                "count": reason["count"],
                "share": reason["share"],
            }
        await expect(mix.first).to_contain_text("Documents verified")
        await expect(mix.first).to_contain_text("50%")

        for chart, found in (
            ("Hands-on time", measures["handlingSeconds"]),
            ("Time to decision", measures["timeToDecisionSeconds"]),
        ):
            assert await bar_values(page, "times", chart) == percentiles(found)

        ttl = {
            "leaseTtlSeconds": "leaseTtlSeconds",
            "recommendedLeaseTtlSeconds": "recommendedLeaseTtlSeconds",
            "leaseCutOffShare": "leaseCutOffShare",
            "lapsedLeaseShare": "lapsedLeaseShare",
        }
        assert await figure_values(page, "leaseTtl", ttl) == {
            "leaseTtlSeconds": read["leaseTtlSeconds"],
            **{f: measures[f] for f in ttl if f != "leaseTtlSeconds"},
        }
        await expect(shown(page, "leaseTtl", "leaseCutOffShare")).to_have_text("50%")
        await expect(shown(page, "leaseTtl", "lapsedLeaseShare")).to_have_text("30%")
        advice = page.locator("[data-panel=leaseTtl] [data-figure=leaseTtlAdvice]")
        await expect(advice).to_have_text(measures["leaseTtlAdvice"])

        for reviewer in measures["reviewers"]:
            fields = ("decided", "overturned", "lapsedLeases", "p50", "p90")
            assert await row_values(page, "reviewers", reviewer["reviewer"], fields) == {
                "decided": reviewer["decided"],
                "overturned": reviewer["overturned"],
                "lapsedLeases": reviewer["lapsedLeases"],
                "p50": reviewer["handlingSeconds"]["p50"],
                "p90": reviewer["handlingSeconds"]["p90"],
            }

        # Capacity: no minutes set on the queue, so the page asks for them; typed, they
        # are the argument of the panel's next read.
        capacity = page.locator("[data-panel=capacity]")
        await expect(capacity).to_contain_text("Type the hands-on minutes your reviewers have")
        assert await figure_values(page, "capacity", {f: f for f in CAPACITY}) == {
            f: measures["capacity"][f] for f in CAPACITY
        }
        await type_minutes(page, "capacity", "8")
        await expect(shown(page, "capacity", "availableMinutesPerDay")).to_have_text("8 min")
        typed = (await api.call(tokens.manager, QUEUE_MEASURES, queue="kyc", minutes=8.0))["queue"][
            "measures"
        ]["capacity"]
        assert typed["enough"] is False
        assert await figure_values(page, "capacity", {f: f for f in CAPACITY}) == {
            f: typed[f] for f in CAPACITY
        }
        # 9 arrivals over 7 days at 305 s each, and 3 waiting: 6.5 + 3.1 minutes a day.
        await expect(shown(page, "capacity", "handlingMinutesMean")).to_have_text("5 min 5 s")
        await expect(capacity).to_contain_text("Not enough: 1.6 min a day short")
        await screenshot(page, "manager-queue")


async def test_the_workflow_page_shows_the_api_measures(
    browser: Browser, casework: Casework, people: WorkflowTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await seed_workflow_history(api, people, owner_conn)
    before = (await api.call(people.manager, WORKFLOW_MEASURES))["workflow"]["measures"]
    assert (before["open"], before["unclaimedNew"], before["unclaimedOverdue"]) == (3, 2, 1)
    assert before["redrives"] == {"requested": 1, "succeeded": 1, "failed": 0, "successRate": 1}
    assert (before["closures"]["corrected"], before["closures"]["duplicate"]) == (1, 1)
    assert (before["reopened"], before["reopenRate"]) == (1, 0.5)
    assert before["repeats"] == [
        {
            "reasonCode": "entity_mismatch",
            "raised": 4,
            "recurrences": 1,
            "sourcesWithRepeats": 1,
            "repeatShare": 0.2,
        }
    ]

    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.manager)
        await section(page, "Manage").click()
        await page.get_by_role("link", name="supplier_onboarding", exact=True).click()
        await expect(shown(page, "now", "open")).to_have_text("3")
        after = (await api.call(people.manager, WORKFLOW_MEASURES))["workflow"]["measures"]

        now = {"open": "open", "unclaimedNew": "unclaimedNew"}
        now |= {"unclaimedOverdue": "unclaimedOverdue", "raised": "raised"}
        assert await figure_values(page, "now", now) == {f: after[f] for f in now}
        assert await value(shown(page, "now", "closed")) == after["closures"]["total"]

        # Ages grow with the clock: what the page read lies between the two API reads.
        ages = page.locator("[data-panel=reasons] tbody tr")
        await expect(ages).to_have_count(len(after["ageByReason"]))
        pairs = zip(before["ageByReason"], after["ageByReason"], strict=True)
        for n, (old, new) in enumerate(pairs):
            row = f"{new['reasonCode']}:{new['consequence']}"
            assert await ages.nth(n).get_attribute("data-row") == row
            assert (await row_values(page, "reasons", row, ("open",)))["open"] == new["open"]
            for field in ("oldestAgeSeconds", "p50AgeSeconds"):
                cell = ages.nth(n).locator(f"[data-field={field}]")
                seconds = float(await cell.get_attribute("data-seconds") or "nan")
                assert old[field] <= seconds <= new[field]
        await expect(ages.first).to_contain_text("5 h")
        by_consequence = {c: 0 for c in ("CRITICAL", "HIGH", "MEDIUM", "LOW")}
        for age in after["ageByReason"]:
            by_consequence[age["consequence"]] += age["open"]
        assert (
            await bar_values(page, "consequence", "Open exceptions by consequence")
            == by_consequence
        )

        for repeat in after["repeats"]:
            fields = ("raised", "recurrences", "sourcesWithRepeats", "repeatShare")
            assert await row_values(page, "repeats", repeat["reasonCode"], fields) == {
                f: repeat[f] for f in fields
            }
        outcomes = {
            "redrivesRequested": after["redrives"]["requested"],
            "redrivesSucceeded": after["redrives"]["succeeded"],
            "redrivesFailed": after["redrives"]["failed"],
            "redriveSuccessRate": after["redrives"]["successRate"],
            "reopened": after["reopened"],
            "reopenRate": after["reopenRate"],
            **{kind: after["closures"][kind] for kind in ("corrected", "rejected")},
            **{kind: after["closures"][kind] for kind in ("duplicate", "obsolete")},
        }
        assert await figure_values(page, "outcomes", {f: f for f in outcomes}) == outcomes
        await expect(shown(page, "outcomes", "reopenRate")).to_have_text("50%")

        for chart, found in (
            ("Operators' hands-on time", after["handlingSeconds"]),
            ("Approvers' hands-on time", after["approverHandlingSeconds"]),
            ("Approval time", after["approvalSeconds"]),
        ):
            assert await bar_values(page, "times", chart) == percentiles(found)
        approval = page.locator("[data-panel=times]").get_by_role("list", name="Approval time")
        await expect(approval).to_contain_text("2 h")

        # Both capacities take their own minutes.
        await type_minutes(page, "capacity", "120")
        await type_minutes(page, "approvalCapacity", "1")
        await expect(shown(page, "capacity", "availableMinutesPerDay")).to_have_text("120 min")
        await expect(shown(page, "approvalCapacity", "availableMinutesPerDay")).to_have_text(
            "1 min"
        )
        typed = (
            await api.call(people.manager, WORKFLOW_MEASURES, minutes=120.0, approverMinutes=1.0)
        )["workflow"]["measures"]
        for panel, field in (("capacity", "capacity"), ("approvalCapacity", "approvalCapacity")):
            assert await figure_values(page, panel, {f: f for f in CAPACITY}) == {
                f: typed[field][f] for f in CAPACITY
            }
        await expect(page.locator("[data-panel=capacity]")).to_contain_text("Enough:")
        await screenshot(page, "manager-workflow")


async def test_a_reviewer_is_not_offered_the_managers_pages(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    await setup_kyc(casework.api, tokens, items=1)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await expect(section(page, "Review")).to_be_visible()
        await expect(section(page, "Manage")).to_have_count(0)
        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        await expect(
            page.get_by_role("heading", name="Manage is for managers and admins")
        ).to_be_visible()
        await expect(page.locator("[data-panel]")).to_have_count(0)
