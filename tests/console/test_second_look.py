"""A second pair of eyes at the console (issue 16): a second reviewer reads a provisional
decision made by someone else and confirms or overrides it; a refusal is shown in words; a
QA reviewer agrees or disagrees with a sampled decision; and the manager's quality figures
are the API's own."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import DECIDE, decision_input
from tests.conftest import token_maker
from tests.console.helpers import (
    QA_QUEUE,
    SAMPLE_EVERY_DECISION,
    SECOND_REVIEW_OF_REJECTIONS,
    SECOND_REVIEW_QUEUE,
    SHOWN_WITHIN_MS,
    People,
    application,
    console_context,
    screenshot,
    screenshot_of,
    setup,
    sign_in,
)
from tests.live.helpers import Api, Casework

# The console's possessive, as a reader sees it.
APOSTROPHE = "\N{RIGHT SINGLE QUOTATION MARK}"
DECISIONS = """
query($id: ID!) {
  item(id: $id) {
    state queue
    decisions {
      reviewer verdict reasonCode note status confirmedBy
      qaResult { agrees reasonCode note reviewer }
    }
  }
}
"""
QUALITY = """
query {
  queue(name: "kyc") {
    measures {
      decided
      quality {
        decided sampled checked agreed agreementRate overturned overturnRate
        byReasonCode { key decided sampled checked agreed agreementRate overturned overturnRate }
        byReviewer { key decided sampled checked agreed agreementRate overturned overturnRate }
      }
    }
  }
}
"""
QA_FIGURES = ("sampled", "checked", "agreed", "agreementRate", "overturnRate")
ROW_FIGURES = ("decided", "sampled", "checked", "agreed", "agreementRate", "overturnRate")


@pytest.fixture
async def people(owner_db: Database) -> People:
    make = token_maker(owner_db)
    queues = ("kyc", SECOND_REVIEW_QUEUE, QA_QUEUE)
    return People(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        manager=await make("max", Role.MANAGER),
        alice=await make("alice", Role.REVIEWER, *queues),
        bob=await make("bob", Role.REVIEWER, *queues),
    )


def said(region: Locator, text: str) -> Locator:
    """The status message of `region` that says `text` (the lease's status is another)."""
    return region.get_by_role("status").filter(has_text=text)


async def open_queue(page: Page, origin: str, queue: str) -> None:
    await page.goto(f"{origin}/console/#/queue/{queue}")
    await expect(page.get_by_role("button", name="Claim next")).to_be_enabled(
        timeout=SHOWN_WITHIN_MS
    )


async def rejected_by_alice(api: Api, people: People, reason: str) -> dict[str, Any]:
    """demo-0001 in a kyc whose rejections get a second look, rejected by alice over the API
    for `reason`: her claim."""
    await setup(api, people, SECOND_REVIEW_OF_REJECTIONS, "demo-0001")
    claim = await api.claim(people.alice, "kyc")
    rejected = await api.call(people.alice, DECIDE, input=decision_input(claim, "REJECT", reason))
    assert rejected["submitDecision"]["__typename"] == "DecisionRecorded", rejected
    return claim


async def reject_in_the_console(page: Page, origin: str, key: str) -> None:
    """Alice claims `key` in kyc and rejects it; the console says it is provisional."""
    await open_queue(page, origin, "kyc")
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )
    await page.get_by_role("combobox", name="Reason").select_option("name_mismatch")
    await page.get_by_role("textbox", name="Decision note").fill(
        "The passport reads Applicant 7; the form says Applicant 1."
    )
    await page.get_by_role("button", name="Reject").click()
    done = said(page.get_by_role("region", name="Decision"), "Rejected: Name does not match")
    await expect(done).to_be_visible(timeout=SHOWN_WITHIN_MS)
    await expect(done).to_contain_text("Provisional: this queue needs a second review")


async def claim_second_review(page: Page, origin: str, key: str) -> Locator:
    """Claims the next item of the second-review queue; returns the First decision card."""
    await open_queue(page, origin, SECOND_REVIEW_QUEUE)
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )
    first = page.get_by_role("region", name="First decision")
    await expect(first).to_be_visible()
    return first


async def decisions(api: Api, token: str, item_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await api.call(token, DECISIONS, id=item_id))["item"][
        "decisions"
    ]
    return found


async def test_a_second_reviewer_confirms_a_decision_its_maker_could_not_take(
    browser: Browser, casework: Casework, people: People
) -> None:
    api = casework.api
    ids = await setup(api, people, SECOND_REVIEW_OF_REJECTIONS, "demo-0001")
    async with (
        console_context(browser, casework.url) as (alice_context, _),
        console_context(browser, casework.url) as (bob_context, _),
    ):
        alice = await sign_in(alice_context, casework.url, people.alice)
        await reject_in_the_console(alice, casework.url, "demo-0001")
        item_id = ids["demo-0001"]
        [provisional] = await decisions(api, people.admin, item_id)
        assert (provisional["reviewer"], provisional["status"]) == ("alice", "PROVISIONAL")

        # The second review waits, but not for her.
        await open_queue(alice, casework.url, SECOND_REVIEW_QUEUE)
        await expect(alice.locator("[data-figure=pending] dd")).to_have_text("1")
        await alice.keyboard.press("n")
        await expect(
            alice.get_by_role(
                "heading", name=f"Nothing to claim in {SECOND_REVIEW_QUEUE} right now"
            )
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await expect(alice.get_by_role("article")).to_have_count(0)

        bob = await sign_in(bob_context, casework.url, people.bob)
        first = await claim_second_review(bob, casework.url, "demo-0001")
        await expect(first.locator("[data-fact=verdict]")).to_have_text("Rejected")
        await expect(first.locator("[data-fact=reason]")).to_contain_text(
            "Name does not match (name_mismatch)"
        )
        await expect(first.locator("[data-fact=note]")).to_have_text(
            "The passport reads Applicant 7; the form says Applicant 1."
        )
        await expect(first.locator("[data-fact=reviewer]")).to_contain_text("alice")
        await expect(first.locator("[data-fact=decidedAt] time")).to_have_count(1)
        evidence = first.locator("[data-fact=evidenceHash]")
        await expect(evidence).to_have_attribute("data-matches", "true")
        await expect(evidence).to_contain_text("Matches the item now")
        await expect(first.get_by_text("Provisional: awaiting second review")).to_be_visible()
        # Judged, not decided afresh: no verdict buttons of a first decision.
        for verdict in ("Approve", "Reject", "Escalate"):
            await expect(bob.get_by_role("button", name=verdict, exact=True)).to_have_count(0)
        # The lease is a lease like any other.
        lease = bob.get_by_role("region", name="Your lease")
        await lease.get_by_role("button", name="Renew lease").click()
        await expect(lease).to_contain_text("Renewed.")
        await screenshot(bob, "second-review")

        await bob.get_by_role("button", name="Confirm decision").click()
        review = bob.get_by_role("region", name="Second review")
        await expect(said(review, "Confirmed: rejected by alice stands")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await expect(bob.get_by_role("button", name="Confirm decision")).to_be_disabled()
        await expect(bob.get_by_role("button", name="Claim next")).to_be_enabled()

        [confirmed] = await decisions(api, people.admin, item_id)
        assert (confirmed["status"], confirmed["confirmedBy"]) == ("EFFECTIVE", "bob")

        await bob.goto(f"{casework.url}/console/#/item/{item_id}")
        listed = bob.get_by_role("region", name="Decisions").get_by_role("listitem")
        await expect(listed).to_have_count(1, timeout=SHOWN_WITHIN_MS)
        await expect(listed).to_contain_text("alice rejected — Name does not match (name_mismatch)")
        await expect(listed.locator("[data-status]").first).to_have_attribute(
            "data-status", "EFFECTIVE"
        )
        await expect(listed).to_contain_text("Effective, confirmed by bob")
        await expect(
            bob.get_by_role("region", name="Now").locator("[data-fact=decided]")
        ).to_contain_text("Effective, confirmed by bob")


async def test_a_second_reviewer_overrides_a_decision(
    browser: Browser, casework: Casework, people: People
) -> None:
    api = casework.api
    claim = await rejected_by_alice(api, people, "document_expired")
    item_id = claim["item"]["id"]
    async with console_context(browser, casework.url) as (context, _):
        bob = await sign_in(context, casework.url, people.bob)
        first = await claim_second_review(bob, casework.url, "demo-0001")
        await expect(first.locator("[data-fact=reason]")).to_contain_text(
            "Document expired (document_expired)"
        )
        await expect(first.locator("[data-fact=note]")).to_have_text("No note.")
        form = bob.get_by_role("form", name="Override")
        reason = form.get_by_role("combobox", name="Override reason")
        await expect(reason).to_be_disabled()
        # Sent with no verdict: held back in the page, the field marked, nothing written.
        await form.get_by_role("button", name="Override decision").click()
        verdict = form.get_by_role("combobox", name="Override verdict")
        await expect(
            bob.get_by_role("region", name="Second review").get_by_role("alert")
        ).to_contain_text("Choose the verdict that should stand first.")
        await expect(verdict).to_have_attribute("aria-invalid", "true")
        await expect(verdict).to_be_focused()
        held_back = await decisions(api, people.admin, item_id)
        assert [(d["reviewer"], d["status"]) for d in held_back] == [("alice", "PROVISIONAL")]
        await verdict.select_option("APPROVE")
        # Only the reasons of the original queue valid for the verdict chosen.
        options = await reason.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
        assert options == ["", "documents_ok"]
        await expect(reason).to_have_value("documents_ok")
        await form.get_by_role("textbox", name="Override note").fill(
            "The passport was renewed in March; the new one is in the scan."
        )
        await screenshot(bob, "override")
        await form.get_by_role("button", name="Override decision").click()
        review = bob.get_by_role("region", name="Second review")
        await expect(
            said(review, "Overridden: now approved — Documents verified (documents_ok)")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)

        found = await decisions(api, people.admin, item_id)
        assert [(d["reviewer"], d["verdict"], d["reasonCode"], d["status"]) for d in found] == [
            ("alice", "REJECT", "document_expired", "SUPERSEDED"),
            ("bob", "APPROVE", "documents_ok", "EFFECTIVE"),
        ]
        assert found[1]["note"] == "The passport was renewed in March; the new one is in the scan."

        await bob.goto(f"{casework.url}/console/#/item/{item_id}")
        listed = bob.get_by_role("region", name="Decisions").get_by_role("listitem")
        await expect(listed).to_have_count(2, timeout=SHOWN_WITHIN_MS)
        await expect(listed.nth(0)).to_contain_text("Superseded")
        await expect(listed.nth(1)).to_contain_text("bob approved — Documents verified")
        await expect(listed.nth(1)).to_contain_text("Effective")
        activity = bob.get_by_role("region", name="Activity").get_by_role("listitem")
        await expect(activity.filter(has_text="bob overrode the first decision")).to_contain_text(
            "now approved — documents_ok"
        )
        await screenshot(bob, "decisions")

    # Nothing was sampled: the manager's quality panel says so, with the overturns beside.
    async with console_context(browser, casework.url) as (context, _):
        max_ = await sign_in(context, casework.url, people.manager)
        await max_.goto(f"{casework.url}/console/#/manage/queue/kyc")
        panel = max_.locator("[data-panel=quality]")
        await expect(panel).to_contain_text("No QA results yet", timeout=SHOWN_WITHIN_MS)
        await expect(panel.locator("[data-figure=agreementRate]")).to_contain_text("no results yet")
        await expect(panel.get_by_role("table")).to_have_count(0)
        settings = max_.locator("[data-panel=settings]")
        await expect(settings.locator("[data-fact=secondReview] dd")).to_have_text(
            "Reject → kyc-second-review"
        )


async def test_evidence_changed_since_the_first_decision_is_refused_in_words(
    browser: Browser, casework: Casework, people: People
) -> None:
    api = casework.api
    claim = await rejected_by_alice(api, people, "name_mismatch")
    # The provider sends the application again, with another document, while it waits.
    [again] = await api.enqueue(people.integration, "kyc", {"demo-0001": application(99)})
    assert again["evidenceUpdated"], again
    item_id = claim["item"]["id"]
    async with console_context(browser, casework.url) as (context, _):
        bob = await sign_in(context, casework.url, people.bob)
        first = await claim_second_review(bob, casework.url, "demo-0001")
        evidence = first.locator("[data-fact=evidenceHash]")
        await expect(evidence).to_have_attribute("data-matches", "false")
        await expect(evidence).to_contain_text("Differs from the item now")
        await expect(first.locator("[data-fact=evidenceWarning]")).to_contain_text(
            "The item was uploaded again after this decision"
        )
        await bob.get_by_role("button", name="Confirm decision").click()
        refusal = bob.get_by_role("region", name="Second review").get_by_role("alert")
        await expect(refusal).to_contain_text(
            "The evidence changed since the first decision, so nothing was recorded.",
            timeout=SHOWN_WITHIN_MS,
        )
        # Nothing was written, and the lease is still his to give back.
        [still] = await decisions(api, people.admin, item_id)
        assert (still["status"], still["confirmedBy"]) == ("PROVISIONAL", None)
        lease = bob.get_by_role("region", name="Your lease")
        await expect(lease.get_by_role("status", name="Lease")).to_contain_text("left")
        await lease.get_by_role("button", name="Release").click()
        await expect(lease.get_by_role("status", name="Lease")).to_contain_text("Released")


async def record_qa(page: Page, key: str, reason: str, note: str) -> Locator:
    """Claims the next QA copy (`key`), chooses `reason` and writes `note`; returns the card
    of the decision under check."""
    await page.keyboard.press("n")
    await expect(page.get_by_role("article", name=f"Item {key}")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )
    checked = page.get_by_role("region", name="Decision under check")
    await expect(checked.locator("[data-fact=reviewer]")).to_contain_text("alice")
    check = page.get_by_role("region", name="QA check")
    await check.get_by_role("combobox", name="QA reason").select_option(reason)
    await check.get_by_role("textbox", name="QA note").fill(note)
    return checked


async def test_a_qa_reviewer_agrees_and_disagrees_and_the_manager_reads_the_quality(
    browser: Browser, casework: Casework, people: People
) -> None:
    api = casework.api
    ids = await setup(api, people, SAMPLE_EVERY_DECISION, "demo-0001", "demo-0002")
    # Alice decides both; every decision is sampled (rate 1) and copied to kyc-qa under a
    # key made from the decision's id.
    copies = []
    for verdict, reason in (("APPROVE", "documents_ok"), ("REJECT", "name_mismatch")):
        claim = await api.claim(people.alice, "kyc")
        recorded = (
            await api.call(
                people.alice,
                DECIDE,
                input=decision_input(claim, verdict, reason) | {"note": f"{reason} on the scan."},
            )
        )["submitDecision"]
        assert recorded["__typename"] == "DecisionRecorded", recorded
        copies.append(f"qa-of-decision-{recorded['decision']['id']}")

    async with console_context(browser, casework.url) as (context, _):
        bob = await sign_in(context, casework.url, people.bob)
        await open_queue(bob, casework.url, QA_QUEUE)
        checked = await record_qa(bob, copies[0], "checks_out", "Photo, name and dates agree.")
        await expect(checked.locator("[data-fact=verdict]")).to_have_text("Approved")
        await expect(checked.locator("[data-fact=reason]")).to_contain_text(
            "Documents verified (documents_ok)"
        )
        await expect(checked.locator("[data-fact=note]")).to_have_text("documents_ok on the scan.")
        for verdict in ("Approve", "Reject", "Escalate"):
            await expect(bob.get_by_role("button", name=verdict, exact=True)).to_have_count(0)
        await screenshot(bob, "qa")
        check = bob.get_by_role("region", name="QA check")
        await check.get_by_role("button", name="Agree", exact=True).click()
        await expect(
            said(
                check,
                f"Recorded: you agree with alice{APOSTROPHE}s decision — "
                "The evidence supports it (checks_out)",
            )
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        await expect(bob.get_by_role("button", name="Claim next")).to_be_enabled()

        await record_qa(bob, copies[1], "missed_mismatch", "The names match.")
        await check.get_by_role("button", name="Disagree", exact=True).click()
        await expect(
            said(
                check,
                f"Recorded: you disagree with alice{APOSTROPHE}s decision — A mismatch was missed",
            )
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)

        first = await decisions(api, people.admin, ids["demo-0001"])
        second = await decisions(api, people.admin, ids["demo-0002"])
        assert [d["qaResult"] for d in first + second] == [
            {
                "agrees": True,
                "reasonCode": "checks_out",
                "note": "Photo, name and dates agree.",
                "reviewer": "bob",
            },
            {
                "agrees": False,
                "reasonCode": "missed_mismatch",
                "note": "The names match.",
                "reviewer": "bob",
            },
        ]

        # The sampled decision's page shows the result beside it.
        await bob.goto(f"{casework.url}/console/#/item/{ids['demo-0002']}")
        listed = bob.get_by_role("region", name="Decisions").get_by_role("listitem")
        await expect(listed).to_have_count(1, timeout=SHOWN_WITHIN_MS)
        await expect(listed.locator("[data-qa]")).to_have_text(
            "QA: disagreed (bob, A mismatch was missed)"
        )
        await expect(listed).to_contain_text("Effective")

    quality = (await api.call(people.manager, QUALITY))["queue"]["measures"]["quality"]
    assert (quality["sampled"], quality["checked"], quality["agreed"]) == (2, 2, 1)
    async with console_context(browser, casework.url) as (context, _):
        max_ = await sign_in(context, casework.url, people.manager)
        await max_.goto(f"{casework.url}/console/#/manage/queue/kyc")
        panel = max_.locator("[data-panel=quality]")
        await expect(panel.locator("[data-figure=checked] dd.figure-value")).to_have_text(
            "2", timeout=SHOWN_WITHIN_MS
        )
        for name in QA_FIGURES:
            shown = panel.locator(f"[data-figure={name}] dd.figure-value")
            raw = await shown.get_attribute("data-value")
            assert raw is not None
            assert (None if raw == "null" else float(raw)) == quality[name], name
        await expect(panel.locator("[data-figure=agreementRate] dd.figure-value")).to_have_text(
            "50%"
        )
        await expect(panel.locator("[data-figure=agreementRate]")).to_contain_text(
            "1 agreed of 2 checked"
        )
        by_reason = panel.get_by_role("table", name="Agreement by reason code")
        by_reviewer = panel.get_by_role("table", name="Agreement by reviewer")
        for table, rows in (
            (by_reason, quality["byReasonCode"]),
            (by_reviewer, quality["byReviewer"]),
        ):
            await expect(table.locator("tbody tr")).to_have_count(len(rows))
            for row in rows:
                cells = table.locator(f"tr[data-row='{row['key']}']")
                for field in ROW_FIGURES:
                    raw = await cells.locator(f"[data-field={field}]").get_attribute("data-value")
                    assert raw is not None
                    assert (None if raw == "null" else float(raw)) == row[field], (row, field)
        await expect(by_reviewer.locator("tr[data-row=alice]")).to_contain_text("50% (1 of 2)")
        settings = max_.locator("[data-panel=settings]")
        await expect(settings.locator("[data-fact=qaSampleRate]")).to_contain_text("100%")
        await expect(settings.locator("[data-fact=secondReview]")).to_contain_text("Off")
        await screenshot_of(max_.get_by_role("region", name="Quality, the last 7 days"), "quality")
