"""Every view of the console passes axe-core's audit (issue 23): each scene below is the
state a person meets (signed out, a queue, a claimed item and each of its outcomes, a lost
lease, a hold, the reconnecting banner, an item's page with a manager's controls, the
manager's pages, the exceptions, a second review, a QA check…), and on each the vendored
axe-core runs in the page and finds no serious or critical violation."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from playwright.async_api import Browser, Page, WebSocketRoute, expect

from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import DECIDE, decision_input
from tests.conftest import token_maker
from tests.console.accessibility import Audit
from tests.console.helpers import (
    EXPIRE_LEASE,
    QA_QUEUE,
    SAMPLE_EVERY_DECISION,
    SECOND_REVIEW_OF_REJECTIONS,
    SECOND_REVIEW_QUEUE,
    SHOWN_WITHIN_MS,
    SUBMIT_CORRECTION,
    ConsoleTokens,
    People,
    WorkflowTokens,
    console_context,
    hold_reasons,
    item_ids,
    open_console,
    section,
    seed_kyc_history,
    seed_workflow_history,
    setup,
    setup_kyc,
    setup_workflow,
    sign_in,
)
from tests.live.helpers import Casework

LEASE_LIMIT = """
mutation { configureQueue(input: {name: "kyc", maxLeasesPerReviewer: 2}) {
  __typename ... on Error { message } } }
"""
NOTE_REQUIRED = """
mutation { defineReasonCode(input: {queue: "kyc", code: "fraud_suspected",
  label: "Fraud suspected", verdicts: [REJECT], requiresNote: true}) {
  __typename ... on Error { message } } }
"""
REVOKE = """
mutation($itemId: ID!) { revokeLease(input: {itemId: $itemId, reason: "Rob is off sick."}) {
  __typename ... on Error { message } } }
"""


async def claim(page: Page, key: str) -> None:
    """Claims the next item (`key`) with the keyboard; returns once its lease runs."""
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )
    # The same item may have been on screen, lost, before this claim of it.
    await expect(page.get_by_role("status", name="Lease")).to_contain_text(
        "left", timeout=SHOWN_WITHIN_MS
    )


async def test_the_reviewers_views_pass_the_audit(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await setup_kyc(api, tokens, items=5)
    await hold_reasons(api, tokens)
    for mutation in (LEASE_LIMIT, NOTE_REQUIRED):
        done = await api.call(tokens.admin, mutation)
        assert "message" not in next(iter(done.values())), done
    # Two leases from a tab closed earlier: the limit is reached.
    await api.claim(tokens.rita, "kyc")
    await api.claim(tokens.rita, "kyc")
    ids = await item_ids(api, tokens)
    sockets: list[WebSocketRoute] = []
    down = asyncio.Event()

    async def through(socket: WebSocketRoute) -> None:
        if down.is_set():
            await socket.close(code=1012, reason="test: server restarting")
            return
        socket.connect_to_server()
        sockets.append(socket)

    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        await context.route_web_socket("**/graphql", through)
        signed_out = await open_console(context, casework.url)
        await expect(signed_out.get_by_role("button", name="Sign in")).to_be_visible()
        await audit(signed_out, "the sign-in form")
        await signed_out.get_by_role("button", name="Sign in").click()
        await expect(signed_out.get_by_role("alert")).to_contain_text("Paste your token first.")
        await audit(signed_out, "the sign-in form, refused")
        await signed_out.close()

        page = await sign_in(context, casework.url, tokens.rita)
        await expect(page.get_by_text("You hold 2 leases from earlier.")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "the queue list, with leases from earlier")
        await page.get_by_role("link", name="kyc", exact=True).click()
        await expect(
            page.get_by_role("heading", name="You hold 2 leases here from earlier")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "a queue, with leases from earlier")
        await page.keyboard.press("n")
        await expect(page.get_by_role("list", name="Your leases")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a queue, at the lease limit")

        await page.get_by_role("button", name="Resume demo-0001").click()
        await expect(page.get_by_role("article", name="Item demo-0001")).to_be_visible()
        await audit(page, "a claimed item")
        await page.keyboard.press("r")
        await page.get_by_role("combobox", name="Reason", exact=True).select_option(
            "fraud_suspected"
        )
        await expect(page.get_by_text("A note is required for this reason.")).to_be_visible()
        await audit(page, "a reason that requires a note")
        await page.get_by_role("button", name="Reject").click()
        await expect(page.get_by_role("textbox", name="Decision note")).to_be_focused()
        await audit(page, "a decision held back for its note")
        await page.get_by_role("button", name="Keyboard shortcuts").click()
        await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
        await audit(page, "the keyboard shortcuts")
        await page.keyboard.press("Escape")
        # The first press chooses the verdict (and its only reason), the second sends it.
        await page.get_by_role("button", name="Approve").click()
        await expect(page.get_by_role("combobox", name="Reason", exact=True)).to_have_value(
            "documents_ok"
        )
        await page.get_by_role("button", name="Approve").click()
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a decided item")

        # demo-0002 (the other earlier lease) is held until a time.
        await page.get_by_role("link", name="Queues").click()
        await page.get_by_role("link", name="kyc", exact=True).click()
        await page.get_by_role("button", name="Resume demo-0002").click()
        hold = page.get_by_role("form", name="Hold")
        await hold.get_by_role("button", name="Hold", exact=True).click()
        await expect(hold.get_by_role("alert")).to_contain_text("Choose a hold reason first.")
        await audit(page, "a hold refused in the page")
        await hold.get_by_role("combobox", name="Hold reason").select_option("awaiting_bank")
        await hold.get_by_role("button", name="Hold", exact=True).click()
        await expect(hold.get_by_role("status")).to_contain_text("On hold", timeout=SHOWN_WITHIN_MS)
        await audit(page, "a held item")

        # demo-0003: another reviewer decides it after the lease lapsed.
        await claim(page, "demo-0003")
        await owner_conn.execute(EXPIRE_LEASE, int(ids["demo-0003"]))
        await api.decide(tokens.rob, await api.claim(tokens.rob, "kyc"))
        lost = page.get_by_role("alert").filter(has_text="Lease lost")
        await expect(lost).to_contain_text("rob", timeout=SHOWN_WITHIN_MS)
        await audit(page, "a lease lost")

        # demo-0004: a manager takes it back.
        await claim(page, "demo-0004")
        revoked = await api.call(tokens.manager, REVOKE, itemId=ids["demo-0004"])
        assert revoked["revokeLease"]["__typename"] == "LeaseRevoked", revoked
        await expect(
            page.get_by_role("alert").filter(has_text="took this item back")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "a lease revoked")

        down.set()
        for socket in sockets:
            await socket.close(code=1012, reason="test: server restarting")
        await expect(
            page.get_by_role("status").filter(has_text="Reconnecting").first
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "reconnecting")
        down.clear()
        await expect(page.get_by_role("status", name="Connection")).to_have_text(
            "Live", timeout=SHOWN_WITHIN_MS
        )

        # The revoked item is claimable again, before the last one.
        for key in ("demo-0004", "demo-0005"):
            await claim(page, key)
            await page.keyboard.press("a")
            await page.keyboard.press("Enter")
            await expect(page.get_by_text("Approved: Documents verified")).to_be_visible(
                timeout=SHOWN_WITHIN_MS
            )
        await page.keyboard.press("n")
        await expect(
            page.get_by_role("heading", name="Nothing to claim in kyc right now")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "a queue with nothing to claim")

        await page.goto(f"{casework.url}/console/#/item/{ids['demo-0001']}")
        await expect(page.get_by_role("region", name="Now")).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await page.get_by_role("button", name="Add note").click()
        await expect(
            page.get_by_role("region", name="Activity").get_by_role("alert")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "an item's page, a note refused")
        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        await expect(
            page.get_by_role("heading", name="Manage is for managers and admins")
        ).to_be_visible()
        await audit(page, "Manage, refused to a reviewer")
        await page.goto(f"{casework.url}/console/#/nowhere")
        await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
        await audit(page, "an unknown address")
        await page.goto(f"{casework.url}/console/#/exceptions")
        await expect(page.get_by_role("heading", name="No exceptions here")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "no exceptions")
    audit.assert_clean()


async def test_the_managers_views_of_a_queue_pass_the_audit(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await seed_kyc_history(api, tokens, owner_conn)
    await hold_reasons(api, tokens)
    # W-1 is rob's; W-2 and W-3 wait.
    await api.claim(tokens.rob, "kyc")
    ids = await item_ids(api, tokens)
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await audit(page, "the queue list, a manager's")
        await page.get_by_role("link", name="kyc", exact=True).click()
        await expect(
            page.get_by_role("heading", name="Reviewers claim in this queue")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "a queue watched by someone who does not claim there")
        await section(page, "Manage").click()
        await expect(page.get_by_role("link", name="kyc", exact=True)).to_be_visible()
        await audit(page, "Manage")
        await page.get_by_role("link", name="kyc", exact=True).click()
        await expect(
            page.locator("[data-panel=window] [data-figure=decided] dd.figure-value")
        ).to_have_text("6", timeout=SHOWN_WITHIN_MS)
        waiting = page.get_by_role("region", name="Waiting items")
        await expect(waiting.get_by_role("table", name="Waiting items")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await expect(
            page.get_by_role("img", name="Backlog of kyc since this page opened").locator("canvas")
        ).to_have_count(1)
        await audit(page, "a queue's page")
        await page.locator("[data-panel=capacity]").get_by_role("spinbutton").fill("8")
        await expect(page.locator("[data-panel=capacity]")).to_contain_text(
            "Not enough", timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a queue's page, its capacity for the minutes typed")

        bar = waiting.get_by_role("group", name="Bulk actions")
        for key in ("W-2", "W-3"):
            await waiting.get_by_role("checkbox", name=f"Select {key}").check()
        revoke = bar.get_by_role("checkbox", name="Revoke their leases")
        await revoke.check()
        for action in ("Assign", "Move", "Hold"):
            await bar.get_by_role("button", name=f"{action}…").click()
            await expect(waiting.get_by_role("form", name=action)).to_be_visible()
            await audit(page, f"a queue's page, bulk {action.lower()}, revoking leases")
        await revoke.uncheck()
        hold = waiting.get_by_role("form", name="Hold")
        await hold.get_by_role("button", name="Hold 2 items").click()
        await expect(hold.get_by_role("alert").or_(waiting.get_by_role("alert"))).to_be_visible()
        await audit(page, "a queue's page, a bulk action refused")
        await hold.get_by_role("combobox", name="Hold reason").select_option("awaiting_bank")
        await hold.get_by_role("button", name="Hold 2 items").click()
        await expect(waiting.get_by_role("status").filter(has_text="Held")).to_contain_text(
            "Held 2 of 2 items.", timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a queue's page, a bulk answer")

        await page.goto(f"{casework.url}/console/#/item/{ids['W-1']}")
        now = page.get_by_role("region", name="Now")
        await expect(now.get_by_role("button", name="Revoke lease")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an item's page, leased, a manager's controls")
        await now.get_by_role("button", name="Revoke lease").click()
        await expect(now.get_by_role("alert")).to_be_visible()
        await audit(page, "an item's page, a control refused")
        await page.goto(f"{casework.url}/console/#/item/{ids['W-2']}")
        await expect(now.get_by_role("button", name="Resume")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an item's page, on hold")
        await page.goto(f"{casework.url}/console/#/item/{ids['A-1']}")
        await expect(
            page.get_by_role("region", name="Decisions").get_by_role("listitem").first
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "an item's page, decided and overturned")
    audit.assert_clean()


async def test_the_exception_views_pass_the_audit(
    browser: Browser, casework: Casework, people: WorkflowTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    await seed_workflow_history(api, people, owner_conn)
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.sam)
        await section(page, "Exceptions").click()
        rows = page.get_by_role("table", name="Exceptions").locator("tbody tr")
        await expect(rows.first).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "the exceptions list")
        await section(page, "Review").click()
        await page.get_by_role("link", name="supplier-ops", exact=True).click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        await page.keyboard.press("n")
        await expect(page.get_by_role("region", name="What stopped")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an exception, claimed, with its actions")
        await page.get_by_role("button", name="Submit correction").click()
        await expect(page.get_by_role("region", name="Actions").get_by_role("alert")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an exception, a correction refused")
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.manager)
        await section(page, "Exceptions").click()
        table = page.get_by_role("table", name="Exceptions")
        await expect(table.locator("tbody tr").first).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await table.get_by_role("link", name="SUP-1").click()
        await expect(page.get_by_role("region", name="History")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an exception, closed, read by a manager")
        await section(page, "Manage").click()
        await page.get_by_role("link", name="supplier_onboarding", exact=True).click()
        await expect(
            page.locator("[data-panel=now] [data-figure=open] dd.figure-value")
        ).to_have_text("3", timeout=SHOWN_WITHIN_MS)
        await audit(page, "a workflow's page")
    audit.assert_clean()


async def test_an_approvers_views_pass_the_audit(
    browser: Browser, casework: Casework, people: WorkflowTokens
) -> None:
    api = casework.api
    ids = await setup_workflow(api, people, ("SUP-1", "CRITICAL"), ("SUP-2", "LOW"))
    # Sam corrects SUP-1; ann, with her reviewer token, SUP-2 (which she may not approve).
    for token, supplier in ((people.sam, "SUP-1"), (people.ann_as_reviewer, "SUP-2")):
        claimed = await api.claim(token, "supplier-ops")
        corrected = await api.call(
            token,
            SUBMIT_CORRECTION,
            input={
                "exceptionId": ids[int(supplier[-1]) - 1],
                "leaseToken": claimed["leaseToken"],
                "reasonCode": "entity_mismatch",
                "changes": {"recordLegalName": f"{supplier} Holdings Ltd"},
                "evidence": [f"docstore://suppliers/{supplier}/registry-extract.pdf"],
            },
        )
        assert corrected["submitCorrection"]["__typename"] == "ExceptionUpdated", corrected
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, people.ann)
        await page.get_by_role("link", name="supplier-approvals", exact=True).click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        await page.keyboard.press("n")
        await expect(page.get_by_role("heading", name="SUP-1")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "an exception awaiting approval")
        await page.get_by_role("button", name="Approve correction").click()
        await expect(page.get_by_text("Approved: the correction can be redriven.")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a correction approved")
        await page.get_by_role("button", name="Request redrive").click()
        await expect(page.get_by_role("table", name="Redrives")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a redrive requested")
        await section(page, "Review").click()
        await page.get_by_role("link", name="supplier-approvals", exact=True).click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
        await page.keyboard.press("n")
        await expect(page.get_by_role("heading", name="SUP-2")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await page.get_by_role("button", name="Approve correction").click()
        await expect(page.get_by_role("alert").filter(has_text="may not approve it")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a self-approval refused")
    audit.assert_clean()


@pytest.fixture
async def checkers(owner_db: Database) -> People:
    make = token_maker(owner_db)
    queues = ("kyc", SECOND_REVIEW_QUEUE, QA_QUEUE)
    return People(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        manager=await make("max", Role.MANAGER),
        alice=await make("alice", Role.REVIEWER, *queues),
        bob=await make("bob", Role.REVIEWER, *queues),
    )


async def test_the_second_look_views_pass_the_audit(
    browser: Browser, casework: Casework, checkers: People
) -> None:
    api = casework.api
    ids = await setup(api, checkers, SECOND_REVIEW_OF_REJECTIONS, "demo-0001", "demo-0002")
    await api.call(checkers.admin, SAMPLE_EVERY_DECISION)
    for verdict, reason in (("REJECT", "name_mismatch"), ("APPROVE", "documents_ok")):
        claimed = await api.claim(checkers.alice, "kyc")
        done = await api.call(
            checkers.alice, DECIDE, input=decision_input(claimed, verdict, reason)
        )
        assert done["submitDecision"]["__typename"] == "DecisionRecorded", done
    audit = Audit(casework.url)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, checkers.bob)
        await page.goto(f"{casework.url}/console/#/queue/{SECOND_REVIEW_QUEUE}")
        await expect(page.get_by_role("heading", name="Ready when you are")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a queue, ready to claim")
        await claim(page, "demo-0001")
        await expect(page.get_by_role("region", name="First decision")).to_be_visible()
        await audit(page, "a second review")
        form = page.get_by_role("form", name="Override")
        await form.get_by_role("button", name="Override decision").click()
        await expect(
            page.get_by_role("region", name="Second review").get_by_role("alert")
        ).to_be_visible()
        await audit(page, "an override held back")
        await page.get_by_role("button", name="Confirm decision").click()
        await expect(
            page.get_by_role("region", name="Second review")
            .get_by_role("status")
            .filter(has_text="Confirmed")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "a second review confirmed")
        await page.goto(f"{casework.url}/console/#/queue/{QA_QUEUE}")
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled(
            timeout=SHOWN_WITHIN_MS
        )
        await page.keyboard.press("n")
        await expect(page.get_by_role("region", name="Decision under check")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a QA check")
        check = page.get_by_role("region", name="QA check")
        await check.get_by_role("combobox", name="QA reason").select_option("checks_out")
        await check.get_by_role("button", name="Agree", exact=True).click()
        await expect(check.get_by_role("status").filter(has_text="Recorded")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a QA check recorded")
        await page.goto(f"{casework.url}/console/#/item/{ids['demo-0001']}")
        await expect(
            page.get_by_role("region", name="Decisions").get_by_role("listitem").first
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await audit(page, "an item's decisions")
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, checkers.manager)
        await page.goto(f"{casework.url}/console/#/manage/queue/kyc")
        quality = page.locator("[data-panel=quality]")
        await expect(quality.locator("[data-figure=checked] dd.figure-value")).to_have_text(
            "1", timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "a queue's page with QA results")
    audit.assert_clean()
