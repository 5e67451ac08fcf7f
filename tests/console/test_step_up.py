"""Step-up in the console, in Chromium against the real test provider: a queue asks for a
sign-in at most five minutes old; a person whose sign-in is older is told so, goes through
the provider's login again (prompt=login), and comes back to the same item with the same
lease and the decision form as they left it; the decision then points at the fresh sign-in.
Signed in with a token instead, the refusal is an error that says why."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from playwright.async_api import Browser, Page, Route, expect

from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import DECIDE, decision_input
from tests.conftest import TestDatabase, token_maker
from tests.console.accessibility import Audit
from tests.console.helpers import (
    SECOND_REVIEW_OF_REJECTIONS,
    SECOND_REVIEW_QUEUE,
    SETUP_QUEUE,
    SHOWN_WITHIN_MS,
    application,
    console_context,
    screenshot,
    sign_in,
)
from tests.identity.oidc import OidcProvider
from tests.identity.sso import (
    KIM,
    PROVIDER_NAME,
    Served,
    add_people,
    serve_sso,
    sso_settings,
    write_rules,
)
from tests.live.helpers import Api

WITHIN_SECONDS = 300
STEP_UP = """
mutation($name: String!, $within: Int!) {
  configureQueue(input: {name: $name, requireAuthWithinSeconds: $within}) {
    __typename ... on Error { message }
  }
}
"""
NOTE = "Passport and selfie match; the second scan is the sharp one."
ASKED = "This queue asks for a recent sign-in (within 5 minutes)."
OVERRIDE_NOTE = "The name on the passport is the one on the form; the scan was misread."


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    started = OidcProvider(tmp_path_factory.mktemp("oidc-provider"))
    started.start()
    add_people(started)
    yield started
    started.stop()


@pytest.fixture
async def served(
    test_database: TestDatabase, provider: OidcProvider, owner_db: Database, tmp_path: Path
) -> AsyncIterator[Served]:
    """Queue kyc with its reasons, asking for a sign-in at most five minutes old, and one
    application waiting in it."""
    settings = sso_settings(provider, write_rules(tmp_path))
    async with serve_sso(test_database, provider, settings) as casework:
        make = token_maker(owner_db)
        admin = await make("ops-admin", Role.ADMIN)
        integration = await make("kyc-provider", Role.INTEGRATION)
        async with httpx.AsyncClient(base_url=casework.url) as http:
            api = Api(http)
            set_up = await api.call(admin, SETUP_QUEUE, name="kyc")
            assert set_up["configureQueue"]["__typename"] == "QueueConfigured", set_up
            stepped = await api.call(admin, STEP_UP, name="kyc", within=WITHIN_SECONDS)
            assert stepped["configureQueue"]["__typename"] == "QueueConfigured", stepped
            await api.enqueue(integration, "kyc", {"app-0001": application(1)})
        yield casework


async def lease_token(owner: asyncpg.Connection) -> str:
    token = await owner.fetchval(
        "SELECT lease_token FROM review_items WHERE external_key = 'app-0001'"
    )
    assert token is not None, "app-0001 is not leased"
    return str(token)


def to_casework_login(url: str) -> bool:
    return "/auth/login" in url


async def claim_and_fill(page: Page) -> None:
    """Claims app-0001 and fills the decision form: approve, its reason, a note."""
    await page.get_by_role("button", name="Claim next").click()
    await expect(page.get_by_role("article")).to_be_visible(timeout=SHOWN_WITHIN_MS)
    await page.get_by_role("combobox", name="Reason").select_option("documents_ok")
    await page.get_by_role("textbox", name="Decision note").fill(NOTE)
    await page.get_by_role("button", name="Approve").click()


async def test_an_old_sign_in_goes_through_the_provider_and_back_to_the_same_lease(
    browser: Browser, served: Served, provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    audit = Audit(served.url)
    errors: list[str] = []
    # A plain profile: the provider is another origin, which console_context would refuse.
    context = await browser.new_context()
    try:
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(f"{served.url}/console/#/queue/kyc")
        await page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
        await page.locator("input[name=login]").fill(KIM[0])
        await page.locator("input[name=password]").fill("any password")
        await page.locator("button[type=submit]").click()
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled(
            timeout=SHOWN_WITHIN_MS
        )
        # The sign-in was an hour ago, as far as Casework knows.
        [old_session] = await owner_conn.fetch(
            "UPDATE sessions SET auth_time = now() - interval '1 hour' RETURNING id"
        )
        # The way to the provider is held until the message has been seen and pictured.
        to_login: asyncio.Queue[Route] = asyncio.Queue()
        await page.route(to_casework_login, to_login.put_nowait)
        await claim_and_fill(page)
        lease = await lease_token(owner_conn)

        message = page.get_by_role("status").filter(has_text=ASKED)
        await expect(message).to_contain_text(
            "Signing you in again; your item stays claimed.", timeout=SHOWN_WITHIN_MS
        )
        await audit(page, "the step-up message")
        await screenshot(page, "step-up")
        assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 0
        held = await asyncio.wait_for(to_login.get(), SHOWN_WITHIN_MS / 1000)
        login = httpx.URL(held.request.url)
        assert login.params["prompt"] == "login"
        assert login.params["max_age"] == str(WITHIN_SECONDS)
        assert login.params["next"] == "/console/#/queue/kyc"
        await held.continue_()
        await page.unroute(to_casework_login)

        # prompt=login: the provider asks again although its own session is live.
        await page.locator("input[name=login]").fill(KIM[0], timeout=SHOWN_WITHIN_MS)
        await page.locator("input[name=password]").fill("any password")
        await page.locator("button[type=submit]").click()

        await expect(
            page.get_by_text("Signed in again. Your item is still claimed.")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        assert page.url.endswith("/console/#/queue/kyc")
        await expect(page.get_by_role("article")).to_have_attribute("aria-label", "Item app-0001")
        await expect(page.get_by_role("textbox", name="Decision note")).to_have_value(NOTE)
        await expect(page.get_by_role("combobox", name="Reason")).to_have_value("documents_ok")
        await expect(page.get_by_role("button", name="Approve")).to_have_attribute(
            "aria-pressed", "true"
        )
        assert await lease_token(owner_conn) == lease
        # Used: nothing is kept for the item any more.
        kept = await page.evaluate(
            "() => Object.keys(sessionStorage).filter((k) => k.startsWith('casework.reauth.'))"
        )
        assert kept == []

        await page.get_by_role("button", name="Submit decision").click()
        await expect(page.get_by_text("Approved: Documents verified")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        row = await owner_conn.fetchrow(
            "SELECT a.session_id, now() - a.auth_time AS age, d.note FROM review_decisions d"
            " JOIN authentications a ON a.id = d.authentication_id"
        )
        assert row is not None
        assert row["session_id"] != old_session["id"]
        assert row["age"].total_seconds() < 60
        assert row["note"] == NOTE
    finally:
        await context.close()
    audit.assert_clean()
    assert errors == []


async def test_a_token_sign_in_is_told_it_cannot_prove_a_recent_one(
    browser: Browser, served: Served, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    rita = await token_maker(owner_db)("rita", Role.REVIEWER, "kyc")
    async with console_context(browser, served.url) as (context, _):
        page = await sign_in(context, served.url, rita)
        await page.goto(f"{served.url}/console/#/queue/kyc")
        await claim_and_fill(page)
        lease = await lease_token(owner_conn)
        refusal = page.get_by_role("alert").filter(has_text=ASKED)
        await expect(refusal).to_contain_text(
            "A token sign-in cannot prove one", timeout=SHOWN_WITHIN_MS
        )
        # No way out to the provider was taken: the page and the lease are as they were.
        assert page.url.endswith("/console/#/queue/kyc")
        await expect(page.get_by_role("button", name="Submit decision")).to_be_enabled()
        assert await lease_token(owner_conn) == lease
        assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 0


async def rejected_by_alice(served: Served, owner_db: Database) -> None:
    """app-0001, rejected by alice (a token, so no sign-in time: the step-up is lifted for
    her decision and put back after it); kyc's rejections wait for a second review."""
    make = token_maker(owner_db)
    admin = await make("ops-admin", Role.ADMIN)
    alice = await make("alice", Role.REVIEWER, "kyc")
    async with httpx.AsyncClient(base_url=served.url) as http:
        api = Api(http)
        for configure, variables in (
            (SECOND_REVIEW_OF_REJECTIONS, {}),
            (STEP_UP, {"name": "kyc", "within": 0}),
        ):
            configured = await api.call(admin, configure, **variables)
            assert configured["configureQueue"]["__typename"] == "QueueConfigured", configured
        claim = await api.claim(alice, "kyc")
        rejected = await api.call(
            alice, DECIDE, input=decision_input(claim, "REJECT", "name_mismatch")
        )
        assert rejected["submitDecision"]["__typename"] == "DecisionRecorded", rejected
        stepped = await api.call(admin, STEP_UP, name="kyc", within=WITHIN_SECONDS)
        assert stepped["configureQueue"]["__typename"] == "QueueConfigured", stepped


async def provider_login(page: Page) -> None:
    await page.locator("input[name=login]").fill(KIM[0], timeout=SHOWN_WITHIN_MS)
    await page.locator("input[name=password]").fill("any password")
    await page.locator("button[type=submit]").click()


async def test_an_override_after_an_old_sign_in_comes_back_as_typed_and_is_recorded(
    browser: Browser, served: Served, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    """The queue a first decision was made in judges its override: kim, signed in an hour
    ago, overrides alice's rejection, is sent through the provider again and comes back to
    the same second-review lease with the override as typed; it is recorded with the fresh
    sign-in."""
    await rejected_by_alice(served, owner_db)
    first = await owner_conn.fetchrow(
        "SELECT id, reviewer, verdict FROM review_decisions WHERE provisional"
    )
    assert first is not None
    assert (first["reviewer"], first["verdict"]) == ("alice", "reject")
    errors: list[str] = []
    context = await browser.new_context()
    try:
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(f"{served.url}/console/#/queue/{SECOND_REVIEW_QUEUE}")
        await page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
        await provider_login(page)
        await expect(page.get_by_role("button", name="Claim next")).to_be_enabled(
            timeout=SHOWN_WITHIN_MS
        )
        [old_session] = await owner_conn.fetch(
            "UPDATE sessions SET auth_time = now() - interval '1 hour' RETURNING id"
        )
        await page.get_by_role("button", name="Claim next").click()
        await expect(page.get_by_role("article")).to_have_attribute(
            "aria-label", "Item app-0001", timeout=SHOWN_WITHIN_MS
        )
        lease = await lease_token(owner_conn)
        form = page.get_by_role("form", name="Override")
        verdict = form.get_by_role("combobox", name="Override verdict")
        reason = form.get_by_role("combobox", name="Override reason")
        note = form.get_by_role("textbox", name="Override note")
        await verdict.select_option("APPROVE")
        await reason.select_option("documents_ok")
        await note.fill(OVERRIDE_NOTE)
        await form.get_by_role("button", name="Override decision").click()

        review = page.get_by_role("region", name="Second review")
        await expect(review.get_by_role("status").filter(has_text=ASKED)).to_contain_text(
            "Signing you in again; your item stays claimed.", timeout=SHOWN_WITHIN_MS
        )
        assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 1

        # prompt=login: the provider asks again although its own session is live.
        await provider_login(page)
        await expect(
            page.get_by_text("Signed in again. Your item is still claimed.")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        assert page.url.endswith(f"/console/#/queue/{SECOND_REVIEW_QUEUE}")
        await expect(page.get_by_role("article")).to_have_attribute("aria-label", "Item app-0001")
        await expect(verdict).to_have_value("APPROVE")
        await expect(reason).to_have_value("documents_ok")
        await expect(note).to_have_value(OVERRIDE_NOTE)
        assert await lease_token(owner_conn) == lease

        await form.get_by_role("button", name="Override decision").click()
        await expect(
            review.get_by_role("status").filter(
                has_text="Overridden: now approved — Documents verified (documents_ok)"
            )
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        rows = await owner_conn.fetch(
            "SELECT d.id, d.reviewer, d.verdict, d.reason_code, d.note, d.provisional,"
            " d.supersedes, a.session_id, now() - a.auth_time AS age"
            " FROM review_decisions d LEFT JOIN authentications a ON a.id = d.authentication_id"
            " ORDER BY d.id"
        )
        assert [(r["id"], r["reviewer"], r["provisional"]) for r in rows] == [
            (first["id"], "alice", True),
            (rows[1]["id"], "kim", False),
        ]
        override = rows[1]
        assert override["supersedes"] == first["id"]
        assert (override["verdict"], override["reason_code"], override["note"]) == (
            "approve",
            "documents_ok",
            OVERRIDE_NOTE,
        )
        assert override["session_id"] is not None
        assert override["session_id"] != old_session["id"]
        assert override["age"].total_seconds() < 60
    finally:
        await context.close()
    assert errors == []
