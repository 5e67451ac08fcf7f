"""An item's Activity at the console: its timeline in words and in order, notes that reach
another browser over the live connection, a refused note that writes nothing, and a reason
code that asks for a note before the decision is sent."""

from __future__ import annotations

from typing import Any

import asyncpg
from playwright.async_api import Browser, Locator, Page, expect

from tests.api.helpers import DECIDE, decision_input
from tests.apply.helpers import wait_until
from tests.apply.receiver import webhook_receiver
from tests.console.helpers import (
    ESCALATE_TO_SENIORS,
    ITEM_DECISIONS,
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    console_context,
    screenshot,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import Api, Casework

ITEM_EVENTS = """
query($id: ID!) {
  item(id: $id) { events(first: 200) { edges { node { kind at actor actorRole body } } } }
}
"""
ADD_NOTE = """
mutation($itemId: ID!, $body: String!) {
  addNote(input: {itemId: $itemId, body: $body}) { __typename ... on Error { message } }
}
"""
DEFINE_REASON = """
mutation($code: String!, $label: String!, $requiresNote: Boolean) {
  defineReasonCode(input: {queue: "kyc", code: $code, label: $label, verdicts: [REJECT],
                           requiresNote: $requiresNote}) {
    __typename ... on Error { message }
  }
}
"""
ITEM_LEASE = "query($id: ID!) { item(id: $id) { state lease { owner } } }"
CREATE_CHANNEL = """
mutation($target: String!) {
  createNotificationChannel(input: {name: "kyc-leads", kind: SLACK, target: $target}) {
    __typename ... on NotificationChannel { id } ... on Error { message }
  }
}
"""
CREATE_RULE = """
mutation($channel: ID!) {
  createNotificationRule(input: {name: "kyc escalations", event: ESCALATED,
                                 channelId: $channel, queues: ["kyc"]}) {
    __typename ... on Error { message }
  }
}
"""
NOTIFICATION_SENT = "SELECT state = 'sent' FROM notification_deliveries WHERE item_id = $1"
RECEIVER_SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# Ends a lease now, as if its TTL had run out, without waiting for it: after its start, so
# that the lapse takes its place in the story between that claim and the next.
EXPIRE_LEASE_NOW = "UPDATE review_items SET lease_expires_at = now() WHERE id = $1"
# What a note may say that would be markup if it were ever parsed as such.
MARKUP_NOTE = "Waiting for the bank's letter. <b>Not bold</b> & <img src=x onerror=alert(1)>"


async def requiring_a_note(api: Api, tokens: ConsoleTokens, code: str, label: str) -> None:
    """The admin (re)defines kyc's rejection reason `code` as one that requires a note."""
    defined = await api.call(tokens.admin, DEFINE_REASON, code=code, label=label, requiresNote=True)
    assert defined["defineReasonCode"]["__typename"] == "ReasonCodeDefined", defined


async def events(api: Api, token: str, item_id: str) -> list[dict[str, Any]]:
    data = await api.call(token, ITEM_EVENTS, id=item_id)
    return [edge["node"] for edge in data["item"]["events"]["edges"]]


async def add_note(api: Api, token: str, item_id: str, body: str) -> None:
    added = (await api.call(token, ADD_NOTE, itemId=item_id, body=body))["addNote"]
    assert added["__typename"] == "NoteAdded", added


async def one_item(api: Api, tokens: ConsoleTokens, key: str = "KYC-7731") -> str:
    """Queue `kyc` with a single, short application; returns its id."""
    await setup_kyc(api, tokens, items=0)
    (item,) = await api.enqueue(
        tokens.integration,
        "kyc",
        {key: {"applicant": "Mira Okafor", "document": "passport", "face_match": 0.91}},
        priority=60,
    )
    item_id: str = item["id"]
    return item_id


def activity(page: Page) -> Locator:
    return page.get_by_role("region", name="Activity")


def entries(page: Page) -> Locator:
    return activity(page).get_by_role("list", name="Activity entries").get_by_role("listitem")


async def kinds(page: Page) -> list[str]:
    found: list[str] = await entries(page).evaluate_all("(es) => es.map((e) => e.dataset.kind)")
    return found


async def claim_first(page: Page, key: str = "KYC-7731") -> None:
    await page.get_by_role("link", name="kyc", exact=True).click()
    await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )


async def open_item(page: Page, origin: str, item_id: str) -> None:
    """The item's own page, in a tab already signed in."""
    await page.goto(f"{origin}/console/#/item/{item_id}")
    await expect(activity(page)).to_be_visible(timeout=SHOWN_WITHIN_MS)


async def test_the_activity_tells_the_items_story_in_order(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    api = casework.api
    item_id = await one_item(api, tokens)
    # Rob opens it and gives it back; the manager leaves a note; rob's next lease lapses.
    await api.release(tokens.rob, await api.claim(tokens.rob, "kyc"))
    await add_note(api, tokens.manager, item_id, MARKUP_NOTE)
    await api.claim(tokens.rob, "kyc")
    assert await owner_conn.execute(EXPIRE_LEASE_NOW, int(item_id)) == "UPDATE 1"

    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await claim_first(page)
        await expect(activity(page).get_by_role("heading", name="Activity")).to_be_visible()
        await expect(entries(page)).to_have_count(7, timeout=SHOWN_WITHIN_MS)
        assert await kinds(page) == [
            "ENQUEUED",
            "CLAIMED",
            "RELEASED",
            "NOTED",
            "CLAIMED",
            "LAPSED",
            "CLAIMED",
        ]
        await expect(entries(page)).to_contain_text(
            [
                "kyc-provider enqueued it",
                "rob claimed it",
                "rob released it",
                "max added a note:",
                "rob claimed it",
                "Lease ran out (rob)",
                "rita claimed it",
            ]
        )
        # Who, with the role, and when: the same moments as the API's, in the page's order.
        await expect(entries(page).nth(0)).to_contain_text("Integration")
        await expect(entries(page).nth(3)).to_contain_text("Manager")
        await expect(entries(page).nth(6)).to_contain_text("Reviewer")
        shown_at = (
            await entries(page)
            .locator("time")
            .evaluate_all("(ts) => ts.map((t) => t.getAttribute('datetime'))")
        )
        assert shown_at == [event["at"] for event in await events(api, tokens.admin, item_id)]
        # The note is text, exactly as written: nothing in it became an element.
        note = entries(page).nth(3)
        await expect(note.locator(".activity-note")).to_have_text(MARKUP_NOTE)
        assert await note.locator("b, img").count() == 0

        await page.keyboard.press("a")
        await page.get_by_role("textbox", name="Decision note").fill("Passport and selfie agree.")
        await page.get_by_role("textbox", name="Decision note").press("Tab")
        await screenshot(page, "activity")
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible()
        # The decision joins the story, with its note, once it is recorded.
        await expect(entries(page)).to_have_count(8, timeout=SHOWN_WITHIN_MS)
        decided = entries(page).nth(7)
        await expect(decided).to_have_attribute("data-kind", "DECIDED")
        await expect(decided).to_contain_text("rita approved — documents_ok")
        await expect(decided).to_contain_text("Passport and selfie agree.")


async def test_a_note_added_in_one_browser_appears_live_in_another(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    item_id = await one_item(api, tokens)
    async with (
        console_context(browser, casework.url) as (rita_context, _),
        console_context(browser, casework.url) as (max_context, _),
    ):
        rita = await sign_in(rita_context, casework.url, tokens.rita)
        await claim_first(rita)
        await expect(entries(rita)).to_have_count(2, timeout=SHOWN_WITHIN_MS)

        # The manager opens the item's own page: rita holds it, and he may note it.
        manager = await sign_in(max_context, casework.url, tokens.manager)
        await open_item(manager, casework.url, item_id)
        now = manager.get_by_role("region", name="Now")
        await expect(now).to_contain_text("Leased")
        await expect(now).to_contain_text("rita")
        await expect(entries(manager)).to_have_count(2)
        box = activity(manager).get_by_role("textbox", name="Note", exact=True)
        await box.fill("Call the applicant before deciding: the address changed last week.")
        await activity(manager).get_by_role("button", name="Add note").click()
        await expect(activity(manager).get_by_role("status")).to_have_text("Note added.")
        await expect(box).to_have_value("")

        # Rita's page reads nothing by itself: the note reaches it over its websocket.
        await expect(entries(rita)).to_have_count(3, timeout=SHOWN_WITHIN_MS)
        await expect(entries(rita).nth(2)).to_contain_text("max added a note:")
        await expect(entries(rita).nth(2)).to_contain_text("the address changed last week")

        # And back: rita's note, with Ctrl+Enter from the box, reaches the manager's page.
        rita_box = activity(rita).get_by_role("textbox", name="Note", exact=True)
        await rita_box.fill("Called them: the new address is on the utility bill.")
        await rita_box.press("Control+Enter")
        await expect(rita_box).to_have_value("")
        await expect(entries(manager)).to_have_count(4, timeout=SHOWN_WITHIN_MS)
        await expect(entries(manager).nth(3)).to_contain_text("rita added a note:")
        await expect(entries(manager).nth(3)).to_contain_text("on the utility bill")
        # Ctrl+Enter in the note box added the note and decided nothing.
        item = (await api.call(tokens.admin, ITEM_LEASE, id=item_id))["item"]
        assert item == {"state": "LEASED", "lease": {"owner": "rita"}}
        await screenshot(manager, "item")

    stored = await events(api, tokens.admin, item_id)
    assert [(e["kind"], e["actor"], e["actorRole"]) for e in stored if e["kind"] == "NOTED"] == [
        ("NOTED", "max", "manager"),
        ("NOTED", "rita", "reviewer"),
    ]


async def test_an_empty_note_is_refused_in_words_and_nothing_is_written(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    item_id = await one_item(api, tokens)
    before = await events(api, tokens.admin, item_id)
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.approver)
        await open_item(page, casework.url, item_id)
        await expect(entries(page)).to_have_count(1)
        box = activity(page).get_by_role("textbox", name="Note", exact=True)
        await box.fill("  \n  ")
        await activity(page).get_by_role("button", name="Add note").click()
        refusal = activity(page).get_by_role("alert")
        await expect(refusal).to_contain_text("Check “Note”.")
        await expect(refusal).to_contain_text("nothing was written")
        # The text stays for the writer to correct; the box says it is the problem.
        await expect(box).to_have_value("  \n  ")
        await expect(box).to_have_attribute("aria-invalid", "true")
        await expect(entries(page)).to_have_count(1)
    assert await events(api, tokens.admin, item_id) == before


async def test_a_reason_that_requires_a_note_asks_for_one_before_sending(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    item_id = await one_item(api, tokens)
    await requiring_a_note(api, tokens, "fraud_suspected", "Fraud suspected")
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.rita)
        await claim_first(page)
        note = page.get_by_role("textbox", name="Decision note")
        requirement = page.get_by_text("A note is required for this reason")
        await page.keyboard.press("r")
        await expect(requirement).to_be_hidden()
        await page.get_by_role("combobox", name="Reason").select_option("fraud_suspected")
        # Said before anything is sent, and the field is marked required.
        await expect(requirement).to_be_visible()
        await expect(note).to_have_attribute("required", "")
        await page.get_by_role("button", name="Reject").click()
        await expect(page.get_by_text("Say what you saw, then submit again.")).to_be_visible()
        await expect(note).to_have_attribute("aria-invalid", "true")
        await expect(note).to_be_focused()
        await screenshot(page, "note-required")
        undecided = (await api.call(tokens.admin, ITEM_DECISIONS, id=item_id))["item"]
        assert undecided == {"state": "LEASED", "currentDecision": None}

        # A code that needs a note since the page read the catalogue: the server refuses,
        # and the console points at the note field; the lease is still held.
        await requiring_a_note(api, tokens, "name_mismatch", "Name does not match")
        await page.get_by_role("combobox", name="Reason").select_option("name_mismatch")
        await expect(requirement).to_be_hidden()
        await expect(note).not_to_have_attribute("aria-invalid", "true")
        await page.get_by_role("button", name="Reject").click()
        refusal = page.get_by_role("alert").filter(has_text="Check “Decision note”.")
        await expect(refusal).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await expect(requirement).to_be_visible()
        await expect(note).to_have_attribute("aria-invalid", "true")
        await expect(note).to_be_focused()
        await expect(page.get_by_role("button", name="Renew lease")).to_be_enabled()
        undecided = (await api.call(tokens.admin, ITEM_DECISIONS, id=item_id))["item"]
        assert undecided == {"state": "LEASED", "currentDecision": None}

        await note.fill("The passport says Okafor-Reid; the application says Okafor.")
        await expect(note).not_to_have_attribute("aria-invalid", "true")
        await page.get_by_role("button", name="Reject").click()
        await expect(page.get_by_text("Rejected: Name does not match")).to_be_visible()
        decided = entries(page).filter(has_text="rita rejected — name_mismatch")
        await expect(decided).to_contain_text("Okafor-Reid", timeout=SHOWN_WITHIN_MS)
    recorded = (await api.call(tokens.admin, ITEM_DECISIONS, id=item_id))["item"]
    assert recorded["currentDecision"] == {
        "verdict": "REJECT",
        "reasonCode": "name_mismatch",
        "reviewer": "rita",
        "note": "The passport says Okafor-Reid; the application says Okafor.",
    }


async def test_show_more_reads_the_next_page_of_a_long_story(
    browser: Browser, casework: Casework, tokens: ConsoleTokens
) -> None:
    api = casework.api
    item_id = await one_item(api, tokens)
    # The arrival and 55 notes: a page of 50, then 6 more.
    for number in range(1, 56):
        await add_note(api, tokens.manager, item_id, f"Note {number} of 55")
    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await open_item(page, casework.url, item_id)
        more = activity(page).get_by_role("button", name="Show more")
        await expect(entries(page)).to_have_count(50, timeout=SHOWN_WITHIN_MS)
        await expect(entries(page).last).to_contain_text("Note 49 of 55")
        await more.click()
        await expect(entries(page)).to_have_count(56)
        await expect(more).to_be_hidden()
        # The reader is taken to the first entry just read.
        await expect(entries(page).nth(50)).to_be_focused()
        await expect(entries(page).nth(50)).to_contain_text("Note 50 of 55")
        await expect(entries(page).last).to_contain_text("Note 55 of 55")


async def test_a_notification_to_the_owners_is_part_of_the_story(
    browser: Browser, casework: Casework, tokens: ConsoleTokens, owner_conn: asyncpg.Connection
) -> None:
    """An escalation the queue's rule tells a channel of: the served worker sends it, and the
    item's Activity says who was told of what, by which rule, and that it went out."""
    api = casework.api
    item_id = await one_item(api, tokens)
    escalation = await api.call(tokens.admin, ESCALATE_TO_SENIORS)
    assert escalation["kyc"]["__typename"] == "QueueConfigured", escalation
    async with webhook_receiver(RECEIVER_SECRET) as receiver:
        made = await api.call(tokens.admin, CREATE_CHANNEL, target=receiver.url)
        channel = made["createNotificationChannel"]
        assert channel["__typename"] == "NotificationChannel", made
        ruled = await api.call(tokens.admin, CREATE_RULE, channel=channel["id"])
        assert ruled["createNotificationRule"]["__typename"] == "NotificationRule", ruled
        claim = await api.claim(tokens.rob, "kyc")
        entry = decision_input(claim, "ESCALATE", "needs_senior")
        decided = (await api.call(tokens.rob, DECIDE, input=entry))["submitDecision"]
        assert decided["__typename"] == "DecisionRecorded", decided

        async def sent() -> bool:
            return bool(await owner_conn.fetchval(NOTIFICATION_SENT, int(item_id)))

        await wait_until(sent, within=20, what="the escalation's notification sent")
        assert len(receiver.requests) == 1

    async with console_context(browser, casework.url) as (context, _):
        page = await sign_in(context, casework.url, tokens.manager)
        await open_item(page, casework.url, item_id)
        told = entries(page).and_(page.locator("[data-kind=NOTIFIED]"))
        await expect(told).to_have_count(1, timeout=SHOWN_WITHIN_MS)
        await expect(told).to_contain_text(
            "casework told kyc-leads that it was escalated (rule kyc escalations): sent"
        )
        await told.scroll_into_view_if_needed()
        await screenshot(page, "activity-notified")
