"""The console with single sign-on, in Chromium against the real test provider: the sign-in
page offers the provider, the provider's login page brings the person back signed in with
their queues, the role switch changes what they act as, signing out ends the session at
Casework and at the provider; a person no rule grants lands on the no-access page."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from server.domain.model import Role
from server.store.database import Database
from tests.conftest import TestDatabase, token_maker
from tests.console.accessibility import Audit
from tests.console.helpers import SHOWN_WITHIN_MS
from tests.identity.oidc import OidcProvider
from tests.identity.sso import (
    KIM,
    NOBODY,
    PROVIDER_NAME,
    Served,
    add_people,
    serve_sso,
    sso_settings,
    write_rules,
)
from tests.live.helpers import Api

SCREENSHOTS = os.environ.get("CASEWORK_SCREENSHOTS_DIR")


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
    settings = sso_settings(provider, write_rules(tmp_path))
    async with serve_sso(test_database, provider, settings) as casework:
        admin = await token_maker(owner_db)("ops-admin", Role.ADMIN)
        async with httpx.AsyncClient(base_url=casework.url) as http:
            await Api(http).configure_queue(admin, "kyc")
        yield casework


async def picture(page: Page, name: str) -> None:
    path = Path(SCREENSHOTS) / f"{name}.png" if SCREENSHOTS else None
    await page.screenshot(path=path, full_page=True)


async def provider_login(page: Page, subject: str) -> None:
    """The provider's own login form (oidc-provider's development interaction)."""
    await page.locator("input[name=login]").fill(subject)
    await page.locator("input[name=password]").fill("any password")
    await page.locator("button[type=submit]").click()


async def new_page(context: BrowserContext, errors: list[str]) -> Page:
    """A tab whose uncaught script errors land in `errors`."""
    page = await context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page


async def test_sign_in_with_the_provider_switch_role_and_sign_out(
    browser: Browser, served: Served, provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    audit = Audit(served.url)
    errors: list[str] = []
    context = await browser.new_context()
    try:
        page = await new_page(context, errors)
        await page.goto(f"{served.url}/console/#/queue/kyc")
        provider_link = page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}")
        await expect(provider_link).to_be_visible()
        # oidc,token: the token form is offered beside it.
        await expect(page.get_by_role("textbox", name="Token")).to_be_visible()
        await audit(page, "the sign-in page with a provider")
        await picture(page, "sso-signin")

        await provider_link.click()
        await provider_login(page, KIM[0])
        header = page.get_by_role("banner")
        await expect(header).to_contain_text("Kim Reviewer", timeout=SHOWN_WITHIN_MS)
        # Back where the login started: the kyc queue.
        assert page.url.endswith("/console/#/queue/kyc")
        await expect(header).to_contain_text("Reviewer")
        await expect(
            page.get_by_role("status", name="Connection").get_by_text("Live")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)
        cookies = {cookie["name"]: cookie for cookie in await context.cookies()}
        session = cookies["casework-session"]
        assert session["httpOnly"] is True
        assert session["sameSite"] == "Lax"
        # No token in the page's storage: the cookie is all it has, and no script reads it.
        stored = await page.evaluate("() => JSON.stringify(sessionStorage)")
        assert "cw_" not in stored
        assert "eyJ" not in stored
        assert "casework-session" not in await page.evaluate("() => document.cookie")

        await page.goto(f"{served.url}/console/#/")
        await expect(page.get_by_role("link", name="kyc", exact=True)).to_be_visible()
        role = page.get_by_role("combobox", name="Role")
        await expect(role).to_have_value("reviewer")
        await audit(page, "the queues, signed in with the provider")
        await role.select_option("approver")
        await expect(page.get_by_role("combobox", name="Role")).to_have_value(
            "approver", timeout=SHOWN_WITHIN_MS
        )
        await expect(header).to_contain_text("Approver")
        await expect(
            page.get_by_role("status", name="Connection").get_by_text("Live")
        ).to_be_visible(timeout=SHOWN_WITHIN_MS)

        await page.get_by_role("button", name="Sign out").click()
        # The provider asks whether to sign out there too, then sends the browser back.
        await page.locator("button[value=yes]").click()
        await expect(page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        assert page.url.startswith(f"{served.url}/console/")
        ended = await owner_conn.fetchval(
            "SELECT bool_and(ended_at IS NOT NULL AND end_reason = 'logout') FROM sessions"
        )
        assert ended is True
        # Signed out at the provider too: signing in again asks for the login again.
        await page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
        await expect(page.locator("input[name=login]")).to_be_visible()
        assert page.url.startswith(provider.issuer)
    finally:
        await context.close()
    audit.assert_clean()
    assert errors == []


async def test_a_person_no_rule_grants_sees_the_no_access_page(
    browser: Browser, served: Served, provider: OidcProvider
) -> None:
    audit = Audit(served.url)
    errors: list[str] = []
    context = await browser.new_context()
    try:
        page = await new_page(context, errors)
        await page.goto(f"{served.url}/console/")
        await page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
        await provider_login(page, NOBODY[0])
        await expect(page.get_by_role("heading", name="No access to Casework")).to_be_visible(
            timeout=SHOWN_WITHIN_MS
        )
        await expect(page.get_by_role("main")).to_contain_text("Nora Newcomer")
        await expect(page.get_by_role("main")).to_contain_text(
            "An administrator must grant you a role"
        )
        await audit(page, "the no-access page")
        await picture(page, "sso-no-access")
    finally:
        await context.close()
    audit.assert_clean()
    assert errors == []
