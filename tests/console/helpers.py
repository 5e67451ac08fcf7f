"""Shared by the console's browser tests: Debian's Chromium under Playwright (no browser
download), a real `casework serve` on the test database, a context that lets nothing leave
for another origin, and the API calls that set scenes up and check their outcomes."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Locator,
    Page,
    Request,
    Route,
    ViewportSize,
)

from server.config import REPO_ROOT
from server.domain.model import Role
from server.graphql.documents.build import manifest_of
from tests.api.helpers import DECIDE, decision_input
from tests.conftest import MakeToken
from tests.exceptions.operations import WORKFLOW_MEASURE_FIELDS
from tests.live.helpers import Api

# Debian's package; CASEWORK_CHROMIUM names another binary.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NO_CHROMIUM = (
    "no Chromium found for the console's browser tests: install Debian's package "
    "(`apt-get install chromium`) or set CASEWORK_CHROMIUM to a Chromium binary"
)
# Where screenshots go when CASEWORK_SCREENSHOTS_DIR is set (docs/console for the docs).
SCREENSHOTS_DIR = os.environ.get("CASEWORK_SCREENSHOTS_DIR")
DOCS_SCREENSHOTS = REPO_ROOT / "docs" / "console"
VIEWPORT: ViewportSize = {"width": 1360, "height": 880}
# Generous bounds on what the page shows after a change; each is awaited, never slept.
SHOWN_WITHIN_MS = 10_000


def chromium_executable() -> str:
    """The Chromium to drive; skips the test where there is none, and fails it under CI."""
    candidates = [os.environ.get("CASEWORK_CHROMIUM") or "", *CHROMIUM_CANDIDATES]
    for candidate in candidates:
        if candidate and (Path(candidate).is_file() or shutil.which(candidate)):
            return candidate
    if os.environ.get("CI") == "true":
        pytest.fail(NO_CHROMIUM + " (CI never skips these tests)")
    pytest.skip(NO_CHROMIUM)


@dataclass
class Watch:
    """What a context tried to fetch elsewhere, and what its pages reported as broken."""

    origin: str
    foreign_requests: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    policy_violations: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.foreign_requests == [], "requests outside the server's origin"
        assert self.page_errors == [], "uncaught errors in the page"
        assert self.policy_violations == [], "Content-Security-Policy violations"


@asynccontextmanager
async def console_context(
    browser: Browser,
    origin: str,
    *,
    viewport: ViewportSize | None = None,
    device_scale_factor: float | None = None,
) -> AsyncIterator[tuple[BrowserContext, Watch]]:
    """A fresh browser profile in which every request to another origin is aborted and
    recorded; leaving the block asserts that none was made and nothing broke. A window of
    VIEWPORT unless `viewport` says otherwise (a phone's width, or a zoomed page's)."""
    context = await browser.new_context(
        viewport=viewport or VIEWPORT, device_scale_factor=device_scale_factor
    )
    watch = Watch(origin)

    async def route(route: Route, request: Request) -> None:
        if request.url.startswith(origin + "/") or request.url == origin:
            await route.continue_()
        else:
            watch.foreign_requests.append(request.url)
            await route.abort()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            watch.policy_violations.append(message.text)

    def on_page(page: Page) -> None:
        page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
        page.on("console", on_console)

    await context.route("**/*", route)
    context.on("page", on_page)
    try:
        yield context, watch
    finally:
        await context.close()
    watch.assert_clean()


async def open_console(context: BrowserContext, origin: str) -> Page:
    page = await context.new_page()
    await page.goto(f"{origin}/console/")
    return page


async def sign_in(context: BrowserContext, origin: str, token: str) -> Page:
    """A new tab on the console, signed in with `token`; returns once the header shows who."""
    page = await open_console(context, origin)
    await page.get_by_role("textbox", name="Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("button", name="Sign out").wait_for(timeout=SHOWN_WITHIN_MS)
    await (
        page.get_by_role("status", name="Connection")
        .get_by_text("Live")
        .wait_for(timeout=SHOWN_WITHIN_MS)
    )
    return page


def section(page: Page, name: str) -> Locator:
    """A link of the header's sections: Review, Exceptions, Manage."""
    return page.get_by_role("navigation", name="Sections").get_by_role("link", name=name)


FADED = """() => document.getAnimations().every(
  (a) => a.playState !== "running" || a.effect?.getTiming().iterations === Infinity)"""


async def screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    """A picture of what a person sees; kept under CASEWORK_SCREENSHOTS_DIR when it is set.
    The whole page, or (full_page=False) the window's first screen of it."""
    path = Path(SCREENSHOTS_DIR) / f"{name}.png" if SCREENSHOTS_DIR else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    # From the top, as the page opens: scrolled, the sticky header lands mid-picture.
    await page.evaluate("window.scrollTo(0, 0)")
    # Once a highlight of something new has faded (spinners and pulses never end).
    await page.wait_for_function(FADED)
    await page.screenshot(path=path, full_page=full_page)


async def screenshot_of(part: Locator, name: str) -> None:
    """A picture of one part of a page (a panel of a long page), as screenshot() does."""
    path = Path(SCREENSHOTS_DIR) / f"{name}.png" if SCREENSHOTS_DIR else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    await part.page.wait_for_function(FADED)
    await part.screenshot(path=path)


# ---- Scenes set up through the API -------------------------------------------------------

SETUP_QUEUE = """
mutation($name: String!, $ttl: Int) {
  configureQueue(input: {name: $name, leaseTtlSeconds: $ttl}) {
    __typename ... on Error { message }
  }
  ok: defineReasonCode(input: {queue: $name, code: "documents_ok",
        label: "Documents verified", verdicts: [APPROVE]}) { __typename }
  mismatch: defineReasonCode(input: {queue: $name, code: "name_mismatch",
        label: "Name does not match", verdicts: [REJECT]}) { __typename }
  expired: defineReasonCode(input: {queue: $name, code: "document_expired",
        label: "Document expired", verdicts: [REJECT]}) { __typename }
  senior: defineReasonCode(input: {queue: $name, code: "needs_senior",
        label: "Needs a senior reviewer", verdicts: [ESCALATE]}) { __typename }
}
"""
ITEM_DECISIONS = """
query($id: ID!) {
  item(id: $id) { state currentDecision { verdict reasonCode reviewer note } }
}
"""
QUEUE_ITEMS = """
query($queue: String!) {
  queue(name: $queue) { items(first: 200) { edges { node { id externalKey state } } } }
}
"""
QUEUE_STATS = """
query($queue: String!) {
  queue(name: $queue) {
    stats {
      pending leased oldestPendingAgeSeconds unappliedDecisions
      unappliedOlderThanThreshold oldestUnappliedAgeSeconds failedApplications
    }
  }
}
"""


def application(number: int) -> dict[str, Any]:
    """A KYC application with nested keys and a long string, as a provider sends one."""
    return {
        "application_id": f"APP-{number:04d}",
        "applicant": {"name": f"Applicant {number}", "date_of_birth": "1984-02-29"},
        "document": {"type": "passport", "number": f"P{number:07d}", "expires_on": "2031-05-01"},
        "checks": {"face_match": 0.93, "liveness": "pass", "sanctions_screening": "clear"},
        "notes": "The applicant uploaded the document twice; the second scan is the sharper "
        "one and the one to compare against the selfie taken at the branch.",
    }


@dataclass(frozen=True)
class ConsoleTokens:
    admin: str
    integration: str
    manager: str
    approver: str
    # Reviewers of `kyc`.
    rita: str
    rob: str


async def console_tokens(make: MakeToken) -> ConsoleTokens:
    return ConsoleTokens(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        manager=await make("max", Role.MANAGER),
        approver=await make("ann", Role.APPROVER),
        rita=await make("rita", Role.REVIEWER, "kyc"),
        rob=await make("rob", Role.REVIEWER, "kyc"),
    )


async def setup_kyc(api: Api, tokens: ConsoleTokens, *, items: int, ttl: int | None = None) -> None:
    """Queue `kyc` with a code per verdict and `items` applications (demo-0001 first)."""
    data = await api.call(tokens.admin, SETUP_QUEUE, name="kyc", ttl=ttl)
    assert data["configureQueue"]["__typename"] == "QueueConfigured", data
    if items:
        # Later numbers have lower priority, so claims take them in order.
        for number in range(1, items + 1):
            await api.enqueue(
                tokens.integration,
                "kyc",
                {f"demo-{number:04d}": application(number)},
                priority=100 - number,
            )


async def items_by_key(api: Api, token: str, queue: str = "kyc") -> dict[str, dict[str, Any]]:
    data = await api.call(token, QUEUE_ITEMS, queue=queue)
    return {edge["node"]["externalKey"]: edge["node"] for edge in data["queue"]["items"]["edges"]}


# ---- A workflow of exceptions ------------------------------------------------------------

WORKFLOW = "supplier_onboarding"
SETUP_WORKFLOW = """
mutation {
  ops: configureQueue(input: {name: "supplier-ops"}) { __typename }
  leads: configureQueue(input: {name: "procurement-leads"}) { __typename }
  approvals: configureQueue(input: {name: "supplier-approvals"}) { __typename }
  workflow: configureWorkflow(input: {name: "supplier_onboarding",
                                      approvalQueue: "supplier-approvals"}) {
    __typename ... on Error { message }
  }
  reason: defineExceptionReason(input: {
    workflow: "supplier_onboarding", code: "entity_mismatch",
    label: "A document names another legal entity",
    ownerRole: "supplier-ops", escalationOwnerRole: "procurement-leads",
    allowedActions: [ATTACH_EVIDENCE, SUBMIT_CORRECTION, APPROVE_CORRECTION, REJECT_CORRECTION,
                     REQUEST_REDRIVE, REPORT_REDRIVE_RESULT, CLOSE_EXCEPTION, REOPEN_EXCEPTION],
    dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
  }) { __typename ... on Error { message } }
}
"""
RAISE = """
mutation($input: RaiseExceptionInput!) {
  raiseException(input: $input) {
    __typename ... on ExceptionRaised { exception { id } } ... on Error { message }
  }
}
"""
SUBMIT_CORRECTION = """
mutation($input: SubmitCorrectionInput!) {
  submitCorrection(input: $input) { __typename ... on Error { message } }
}
"""
EXCEPTION_STATE = """
query($id: ID!) {
  exception(id: $id) {
    state version currentCorrection { correctedBy changes } redrive { key }
    events { kind actor }
  }
}
"""


@dataclass(frozen=True)
class WorkflowTokens:
    admin: str
    erp: str
    manager: str
    # A reviewer of supplier-ops.
    sam: str
    # Ann approves; her reviewer token lets her correct too, which four-eyes watches.
    ann: str
    ann_as_reviewer: str


async def workflow_tokens(make: MakeToken) -> WorkflowTokens:
    return WorkflowTokens(
        admin=await make("ada", Role.ADMIN),
        erp=await make("erp-onboarding", Role.INTEGRATION),
        manager=await make("max", Role.MANAGER),
        sam=await make("sam", Role.REVIEWER, "supplier-ops"),
        ann=await make("ann", Role.APPROVER),
        ann_as_reviewer=await make("ann", Role.REVIEWER, "supplier-ops"),
    )


async def setup_workflow(
    api: Api, tokens: WorkflowTokens, *suppliers: tuple[str, str]
) -> list[str]:
    """The supplier-onboarding workflow and one exception per (supplier, consequence);
    returns their ids."""
    data = await api.call(tokens.admin, SETUP_WORKFLOW)
    assert data["workflow"]["__typename"] == "WorkflowConfigured", data
    assert data["reason"]["__typename"] == "ExceptionReasonDefined", data
    ids = []
    for supplier, consequence in suppliers:
        raised = (
            await api.call(
                tokens.erp,
                RAISE,
                input={
                    "workflow": WORKFLOW,
                    "sourceRecordId": supplier,
                    "reasonCode": "entity_mismatch",
                    "detail": f"The certificate of {supplier} names another legal entity.",
                    "consequence": consequence,
                    "completedSteps": ["collect_documents", "verify_bank_account"],
                    "blockedStep": "verify_legal_entity",
                    "evidence": [f"docstore://suppliers/{supplier}/pack.pdf"],
                    "context": {"recordLegalName": f"{supplier} Trading Ltd"},
                },
            )
        )["raiseException"]
        assert raised["__typename"] == "ExceptionRaised", raised
        ids.append(raised["exception"]["id"])
    return ids


# ---- Histories with known measures -------------------------------------------------------

QUEUE_MEASURES = """
query($queue: String!, $minutes: Float) {
  queue(name: $queue) {
    leaseTtlSeconds
    measures {
      arrivals decided escalated overturned backlog lapsedLeases releasedLeases
      leaseCountAtDecision { leaseCount items }
      leaseCountPending { leaseCount items }
      lapsedLeaseShare recommendedLeaseTtlSeconds leaseCutOffShare leaseTtlAdvice
      handlingSeconds { samples p50 p90 p99 max }
      timeToDecisionSeconds { samples p50 p90 p99 max }
      reasons { code verdict count share }
      reviewers { reviewer decided overturned lapsedLeases handlingSeconds { p50 p90 } }
      capacity(availableReviewerMinutesPerDay: $minutes) {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
        availableMinutesPerDay headroomMinutesPerDay enough
      }
    }
  }
}
"""
ESCALATE_TO_SENIORS = """
mutation {
  senior: configureQueue(input: {name: "kyc-senior"}) { __typename }
  kyc: configureQueue(input: {name: "kyc", escalationQueue: "kyc-senior"}) { __typename }
}
"""
OVERTURN = """
mutation($input: OverturnDecisionInput!) {
  overturnDecision(input: $input) { __typename ... on Error { message } }
}
"""
# A lease whose TTL ran out, as if it had, without waiting for it.
EXPIRE_LEASE = (
    "UPDATE review_items SET lease_expires_at = now() - interval '1 second' WHERE id = $1"
)
# The lease began `$2` seconds ago and the item arrived an hour before that: the hands-on
# and elapsed times of the decision to come, moved in SQL (nobody waits).
MOVE_LEASE_START = (
    "UPDATE review_items SET lease_started_at = now() - make_interval(secs => $2), "
    "created_at = now() - make_interval(secs => $2 + 3600) WHERE id = $1"
)


@dataclass(frozen=True)
class Reviewed:
    """One item of a scripted queue history: whose leases lapsed on it before it was
    decided, who decided it, how, and after how long hands-on."""

    key: str
    lapsed_by: tuple[str, ...]
    decided_by: str
    verdict: str
    reason: str
    hands_on_seconds: int


# Known answers (TTL 300 s): lease counts at decision 1: 4, 2: 1, 3: 1; rita decided 4 (1
# overturned later) and let 1 lease lapse, rob decided 2 and let 2 lapse; 3 of the 6 took
# longer than the TTL; mean hands-on 305 s.
KYC_HISTORY = (
    Reviewed("A-1", (), "rita", "APPROVE", "documents_ok", 150),
    Reviewed("A-2", (), "rita", "APPROVE", "documents_ok", 240),
    Reviewed("A-3", ("rob",), "rita", "REJECT", "name_mismatch", 420),
    Reviewed("A-4", (), "rob", "APPROVE", "documents_ok", 330),
    Reviewed("A-5", ("rob", "rita"), "rob", "ESCALATE", "needs_senior", 600),
    Reviewed("A-6", (), "rita", "REJECT", "document_expired", 90),
)


async def seed_kyc_history(api: Api, tokens: ConsoleTokens, owner: asyncpg.Connection) -> None:
    """Queue `kyc` with KYC_HISTORY decided, A-1 overturned, and three items pending: two
    never opened and one released (one lease)."""
    await setup_kyc(api, tokens, items=0)
    # Escalations leave for a senior queue (without one they would wait in kyc again).
    escalation = await api.call(tokens.admin, ESCALATE_TO_SENIORS)
    assert escalation["kyc"]["__typename"] == "QueueConfigured", escalation
    token = {"rita": tokens.rita, "rob": tokens.rob}
    decision_ids: dict[str, str] = {}
    for number, reviewed in enumerate(KYC_HISTORY, start=1):
        # Alone in the queue: each claim below can only take this item.
        await api.enqueue(tokens.integration, "kyc", {reviewed.key: application(number)})
        for who in reviewed.lapsed_by:
            lapsed = await api.claim(token[who], "kyc")
            await owner.execute(EXPIRE_LEASE, int(lapsed["item"]["id"]))
        claim = await api.claim(token[reviewed.decided_by], "kyc")
        assert claim["item"]["leaseCount"] == len(reviewed.lapsed_by) + 1, claim
        moved = await owner.execute(
            MOVE_LEASE_START, int(claim["item"]["id"]), float(reviewed.hands_on_seconds)
        )
        assert moved == "UPDATE 1"
        entry = decision_input(claim, reviewed.verdict, reviewed.reason)
        recorded = (await api.call(token[reviewed.decided_by], DECIDE, input=entry))[
            "submitDecision"
        ]
        assert recorded["__typename"] == "DecisionRecorded", recorded
        decision_ids[reviewed.key] = recorded["decision"]["id"]
    overturned = await api.call(
        tokens.approver,
        OVERTURN,
        input={"decisionId": decision_ids["A-1"], "reasonCode": "name_mismatch"},
    )
    assert overturned["overturnDecision"]["__typename"] == "DecisionRecorded", overturned
    await api.enqueue(tokens.integration, "kyc", {"W-1": application(7)}, priority=1)
    await api.release(tokens.rob, await api.claim(tokens.rob, "kyc"))
    await api.enqueue(tokens.integration, "kyc", {"W-2": application(8), "W-3": application(9)})


WORKFLOW_MEASURES = (
    """
query($minutes: Float, $approverMinutes: Float) {
  workflow(name: "supplier_onboarding") {
    measures {
      open unclaimedNew unclaimedOverdue raised"""
    + WORKFLOW_MEASURE_FIELDS
    + """
      approverHandlingSeconds { samples p50 p90 p99 max }
      capacity(availableReviewerMinutesPerDay: $minutes) {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
        availableMinutesPerDay headroomMinutesPerDay enough
      }
      approvalCapacity(availableApproverMinutesPerDay: $approverMinutes) {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
        availableMinutesPerDay headroomMinutesPerDay enough
      }
    }
  }
}
"""
)


def exception_mutation(field: str, input_type: str, fields: str = "") -> str:
    return (
        f"mutation($input: {input_type}!) {{ {field}(input: $input) "
        f"{{ __typename {fields} ... on Error {{ message }} }} }}"
    )


CLOSE_EXCEPTION = exception_mutation("closeException", "CloseExceptionInput")
REOPEN_EXCEPTION = exception_mutation("reopenException", "ReopenExceptionInput")
APPROVE_CORRECTION = exception_mutation("approveCorrection", "ApproveCorrectionInput")
REQUEST_REDRIVE = exception_mutation(
    "requestRedrive", "RequestRedriveInput", "... on RedriveQueued { redriveKey }"
)
REPORT_REDRIVE = exception_mutation("reportRedriveResult", "ReportRedriveResultInput")
# The events of one kind of an exception got leases that began `$3` seconds before them.
MOVE_HANDS_ON = (
    "UPDATE exception_events SET lease_started_at = at - make_interval(secs => $3) "
    "WHERE exception_id = $1 AND kind = $2"
)
# The approved correction was submitted `$2` seconds before its approval.
MOVE_SUBMISSION = """
UPDATE exception_corrections AS c SET submitted_at = v.at - make_interval(secs => $2)
FROM exception_events AS v
WHERE c.exception_id = $1 AND v.exception_id = c.exception_id AND v.version = c.version
  AND v.kind = 'correction_approved'
"""


async def act(api: Api, token: str, mutation: str, **input: Any) -> dict[str, Any]:
    """One exception mutation, asserted to have done what it says."""
    (result,) = (await api.call(token, mutation, input=input)).values()
    assert isinstance(result, dict), result
    assert "message" not in result, result
    return result


async def correct_legal_name(
    api: Api, token: str, exception_id: str, lease_token: str, supplier: str
) -> None:
    """A correction of `supplier`'s record to the legal name its registry extract shows,
    under the claim's lease; it awaits approval."""
    corrected = (
        await api.call(
            token,
            SUBMIT_CORRECTION,
            input={
                "exceptionId": exception_id,
                "leaseToken": lease_token,
                "reasonCode": "entity_mismatch",
                "changes": {"recordLegalName": f"{supplier} Holdings Ltd"},
                "evidence": [f"docstore://suppliers/{supplier}/registry-extract.pdf"],
            },
        )
    )["submitCorrection"]
    assert corrected["__typename"] == "ExceptionUpdated", corrected


async def seed_workflow_history(
    api: Api, people: WorkflowTokens, owner: asyncpg.Connection
) -> None:
    """Known answers: SUP-1 raised twice (a recurrence), corrected in 10 min hands-on,
    approved 2 h after, redriven and closed corrected; SUP-2 closed as a duplicate after 4
    min, then reopened; SUP-3 open and overdue for 5 h; SUP-4 open, new, 2 h old. So: 3
    open, 2 unclaimed new, 1 overdue, closures 1 corrected + 1 duplicate, 1 reopen (50%)."""
    sup1, sup2, sup3, sup4 = await setup_workflow(
        api, people, ("SUP-1", "CRITICAL"), ("SUP-2", "HIGH"), ("SUP-3", "LOW"), ("SUP-4", "LOW")
    )
    again = (
        await api.call(
            people.erp,
            RAISE,
            input={
                "workflow": WORKFLOW,
                "sourceRecordId": "SUP-1",
                "reasonCode": "entity_mismatch",
                "detail": "The certificate of SUP-1 still names another legal entity.",
                "consequence": "CRITICAL",
            },
        )
    )["raiseException"]
    assert again["__typename"] == "ExceptionRaised", again
    assert again["exception"]["id"] == sup1, again

    # Claims take the oldest first: SUP-1, then SUP-2.
    claim = await api.claim(people.sam, "supplier-ops")
    await correct_legal_name(api, people.sam, sup1, claim["leaseToken"], "SUP-1")
    approval = await api.claim(people.ann, "supplier-approvals")
    await act(
        api,
        people.ann,
        APPROVE_CORRECTION,
        exceptionId=sup1,
        leaseToken=approval["leaseToken"],
        version=1,
    )
    queued = await act(api, people.ann, REQUEST_REDRIVE, exceptionId=sup1, version=1)
    await act(api, people.erp, REPORT_REDRIVE, redriveKey=queued["redriveKey"], succeeded=True)

    claim = await api.claim(people.sam, "supplier-ops")
    await act(
        api,
        people.sam,
        CLOSE_EXCEPTION,
        exceptionId=sup2,
        leaseToken=claim["leaseToken"],
        closure="DUPLICATE",
    )
    await act(api, people.sam, REOPEN_EXCEPTION, exceptionId=sup2, reason="Not the same one.")

    for exception_id, kind, seconds in (
        (sup1, "correction_submitted", 600),
        (sup1, "correction_approved", 180),
        (sup2, "closed", 240),
    ):
        assert await owner.execute(MOVE_HANDS_ON, exception_id, kind, seconds) == "UPDATE 1"
    assert await owner.execute(MOVE_SUBMISSION, sup1, 7200) == "UPDATE 1"
    for exception_id, hours, overdue in ((sup3, 5, True), (sup4, 2, False)):
        moved = await owner.execute(
            "UPDATE exceptions SET created_at = now() - make_interval(hours => $2), "
            "due_at = CASE WHEN $3 THEN now() - interval '1 hour' ELSE due_at END "
            "WHERE id = $1",
            exception_id,
            hours,
            overdue,
        )
        assert moved == "UPDATE 1"


# ---- The claim controls (issue 14) ---------------------------------------------------

HOLD_REASON = """
mutation($code: String!, $label: String!) {
  defineHoldReason(input: {queue: "kyc", code: $code, label: $label}) {
    __typename ... on Error { message }
  }
}
"""
ITEM_CONTROLS = """
query($id: ID!) {
  item(id: $id) {
    state lease { owner } hold { until reason } assignment { reviewer until }
    events(first: 100) { edges { node { kind actor body holdReason assignee } } }
  }
}
"""


async def item_controls(api: Api, token: str, item_id: str) -> dict[str, Any]:
    item: dict[str, Any] = (await api.call(token, ITEM_CONTROLS, id=item_id))["item"]
    item["events"] = [edge["node"] for edge in item["events"]["edges"]]
    return item


async def hold_reasons(api: Api, tokens: ConsoleTokens) -> None:
    for code, label in (
        ("awaiting_customer", "Waiting for the customer"),
        ("awaiting_bank", "Waiting for the bank's letter"),
    ):
        defined = await api.call(tokens.admin, HOLD_REASON, code=code, label=label)
        assert defined["defineHoldReason"]["__typename"] == "HoldReasonDefined", defined


async def item_ids(api: Api, tokens: ConsoleTokens) -> dict[str, str]:
    data = await api.call(
        tokens.admin, '{ queue(name: "kyc") { items { edges { node { id externalKey } } } } }'
    )
    return {
        edge["node"]["externalKey"]: edge["node"]["id"] for edge in data["queue"]["items"]["edges"]
    }


# --- second review and QA (test_second_look.py, test_accessibility.py) ---------------------

SECOND_REVIEW_QUEUE = "kyc-second-review"


QA_QUEUE = "kyc-qa"


SECOND_REVIEW_OF_REJECTIONS = """
mutation {
  configureQueue(input: {name: "kyc", secondReview: {verdicts: [REJECT]}}) {
    __typename ... on Error { message }
  }
}
"""


SAMPLE_EVERY_DECISION = """
mutation {
  configureQueue(input: {name: "kyc", qaSampleRate: 1.0}) { __typename ... on Error { message } }
  agree: defineReasonCode(input: {queue: "kyc-qa", code: "checks_out",
        label: "The evidence supports it", verdicts: [APPROVE]}) {
    __typename ... on Error { message }
  }
  disagree: defineReasonCode(input: {queue: "kyc-qa", code: "missed_mismatch",
        label: "A mismatch was missed", verdicts: [REJECT]}) {
    __typename ... on Error { message }
  }
}
"""


@dataclass(frozen=True)
class People:
    admin: str
    integration: str
    manager: str
    # Reviewers of kyc, of its second-review queue and of its QA queue.
    alice: str
    bob: str


async def setup(api: Api, people: People, configure: str, *keys: str) -> dict[str, str]:
    """Queue kyc with its reason codes, `configure` applied, and an application per key
    (the first key claimed first); returns the items' ids by key."""
    data = await api.call(people.admin, SETUP_QUEUE, name="kyc", ttl=None)
    assert data["configureQueue"]["__typename"] == "QueueConfigured", data
    configured = await api.call(people.admin, configure)
    for result in configured.values():
        assert "message" not in result, configured
    ids = {}
    for number, key in enumerate(keys, start=1):
        [item] = await api.enqueue(
            people.integration, "kyc", {key: application(number)}, priority=90 - number
        )
        ids[key] = item["id"]
    return ids


# ---- Trusted documents ---------------------------------------------------------------------


_DOCUMENT = re.compile(r"\s*((query|mutation|subscription)\b|\{)")


def helper_documents() -> list[str]:
    """The documents the tests' own API calls send (the helpers' module-level texts): an
    integration of their own, which a trusted-mode server knows from its own manifest."""
    from tests.api import helpers as api_helpers
    from tests.live import helpers as live_helpers

    modules = (api_helpers, live_helpers, sys.modules[__name__])
    return [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, str) and _DOCUMENT.match(value)
    ]


def trusted_documents_env(folder: Path) -> dict[str, str]:
    """The environment of a server in CASEWORK_DOCUMENTS=trusted that also trusts the
    helpers' documents (a manifest written into `folder`)."""
    manifest = folder / "test-helpers.json"
    manifest.write_text(json.dumps(manifest_of(helper_documents())))
    return {"CASEWORK_DOCUMENTS": "trusted", "CASEWORK_TRUSTED_DOCUMENTS": str(manifest)}
