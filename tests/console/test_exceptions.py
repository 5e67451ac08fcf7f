"""The exceptions workspace: a reviewer corrects, an approver approves and redrives, the
list follows live, and an approver's own correction is refused in words."""

from __future__ import annotations

from playwright.async_api import Browser, Page, expect

from tests.console.helpers import (
    EXCEPTION_STATE,
    SHOWN_WITHIN_MS,
    WorkflowTokens,
    console_context,
    correct_legal_name,
    screenshot,
    section,
    setup_workflow,
    sign_in,
)
from tests.live.helpers import Casework


async def claim_in_queue(page: Page, queue: str) -> None:
    """From the queue list: open `queue` and claim its next item (an exception's page)."""
    await section(page, "Review").click()
    await page.get_by_role("link", name=queue, exact=True).click()
    await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
    await page.keyboard.press("n")
    await expect(page.get_by_role("region", name="What stopped")).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )


async def test_an_approver_approves_a_correction_and_is_refused_their_own(
    browser: Browser, casework: Casework, people: WorkflowTokens
) -> None:
    api = casework.api
    first, second = await setup_workflow(api, people, ("SUP-1", "CRITICAL"), ("SUP-2", "LOW"))
    async with (
        console_context(browser, casework.url) as (sam_context, _),
        console_context(browser, casework.url) as (ann_context, _),
    ):
        sam = await sign_in(sam_context, casework.url, people.sam)
        await section(sam, "Exceptions").click()
        rows = sam.get_by_role("table", name="Exceptions").locator("tbody tr")
        await expect(rows).to_have_count(2)
        await screenshot(sam, "exceptions")

        # Sam claims the critical one and corrects it through the form.
        await claim_in_queue(sam, "supplier-ops")
        await expect(sam.get_by_role("heading", name="SUP-1")).to_be_visible()
        await expect(sam.get_by_role("status", name="Lease")).to_contain_text("left")
        await expect(sam.get_by_role("textbox", name="Field 1")).to_have_value("recordLegalName")
        await sam.get_by_role("textbox", name="Value 1").fill("SUP-1 Holdings Ltd")
        await sam.get_by_role("textbox", name="Evidence references").fill(
            "docstore://suppliers/SUP-1/registry-extract.pdf"
        )
        await screenshot(sam, "exception")
        await sam.get_by_role("button", name="Submit correction").click()
        await expect(
            sam.get_by_text("Correction submitted: it waits for an approver.")
        ).to_be_visible()
        await expect(sam.get_by_role("heading", name="SUP-1")).to_contain_text("Awaiting approval")
        submitted = (await api.call(people.admin, EXCEPTION_STATE, id=first))["exception"]
        assert submitted["state"] == "AWAITING_APPROVAL"
        assert submitted["currentCorrection"] == {
            "correctedBy": "sam",
            "changes": {"recordLegalName": "SUP-1 Holdings Ltd"},
        }
        # Sam watches the list while ann works.
        await section(sam, "Exceptions").click()
        sup1 = sam.locator(f"tr[data-exception='{first}']")
        await expect(sup1).to_contain_text("Awaiting approval")

        ann = await sign_in(ann_context, casework.url, people.ann)
        await claim_in_queue(ann, "supplier-approvals")
        await expect(ann.get_by_role("heading", name="SUP-1")).to_be_visible()
        await expect(ann.get_by_role("region", name="Corrections")).to_contain_text(
            "SUP-1 Holdings Ltd"
        )
        await ann.get_by_role("button", name="Approve correction").click()
        await expect(ann.get_by_text("Approved: the correction can be redriven.")).to_be_visible()
        await expect(sup1).to_contain_text("Redrive pending", timeout=SHOWN_WITHIN_MS)
        await ann.get_by_role("button", name="Request redrive").click()
        key = f"supplier_onboarding:SUP-1:v{submitted['version']}"
        await expect(ann.get_by_text(f"Redrive requested. Key: {key}")).to_be_visible()
        await expect(ann.get_by_role("table", name="Redrives")).to_contain_text(key)
        await expect(ann.get_by_role("region", name="History")).to_contain_text(
            "Correction approved"
        )
        redriven = (await api.call(people.admin, EXCEPTION_STATE, id=first))["exception"]
        assert redriven["state"] == "REDRIVE_PENDING"
        assert redriven["redrive"] == {"key": key}

        # Ann, with her reviewer token, corrected the other one herself.
        claim = await api.claim(people.ann_as_reviewer, "supplier-ops")
        assert claim["item"]["id"]
        await correct_legal_name(api, people.ann_as_reviewer, second, claim["leaseToken"], "SUP-2")
        await claim_in_queue(ann, "supplier-approvals")
        await expect(ann.get_by_role("heading", name="SUP-2")).to_be_visible()
        await ann.get_by_role("button", name="Approve correction").click()
        refusal = ann.get_by_role("alert").filter(has_text="may not approve it")
        await expect(refusal).to_be_visible()
        await expect(refusal).to_contain_text("another approver must approve it")
        await screenshot(ann, "self-approval-refused")
    unchanged = (await api.call(people.admin, EXCEPTION_STATE, id=second))["exception"]
    assert unchanged["state"] == "AWAITING_APPROVAL"
    assert "correction_approved" not in [event["kind"] for event in unchanged["events"]]
