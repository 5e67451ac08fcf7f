"""A reviewer at the console reads a policy item: personal values in the payload, the
sensitive one masked until revealed with a reason (and logged once)."""

from __future__ import annotations

from pathlib import Path

import asyncpg
from playwright.async_api import Browser, expect

from server.domain.privacy.keys import LocalKeyFile
from server.store.database import Database
from tests.conftest import TestDatabase
from tests.console.helpers import (
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    console_context,
    screenshot_of,
    setup_kyc,
    sign_in,
)
from tests.live.helpers import serve_casework
from tests.privacy.conftest import attach_policy
from tests.privacy.shown import CANARY_NAME, CANARY_PASSPORT, ENQUEUE, applicant

PASSPORT = "applicant.passport_number"


async def test_a_masked_field_is_revealed_with_a_reason(
    browser: Browser,
    test_database: TestDatabase,
    db: Database,
    tokens: ConsoleTokens,
    tmp_path: Path,
    owner_conn: asyncpg.Connection,
) -> None:
    key_file = LocalKeyFile.create(tmp_path / "keys.json").path
    async with serve_casework(test_database, CASEWORK_KEY_FILE=str(key_file)) as casework:
        await setup_kyc(casework.api, tokens, items=0)
        await attach_policy(db, "kyc")
        items = [{"externalKey": "demo-0001", "payload": applicant(), "subjectRef": "cust-9"}]
        enqueued = await casework.api.call(tokens.integration, ENQUEUE, queue="kyc", items=items)
        assert enqueued["enqueueItems"]["__typename"] == "EnqueuedItems", enqueued

        async with console_context(browser, casework.url) as (context, _):
            page = await sign_in(context, casework.url, tokens.rita)
            await page.get_by_role("link", name="kyc", exact=True).click()
            await expect(page.get_by_role("button", name="Claim next")).to_be_enabled()
            await page.get_by_role("button", name="Claim next").click()
            item = page.get_by_role("article", name="Item demo-0001")
            await expect(item).to_be_visible(timeout=SHOWN_WITHIN_MS)
            await expect(item.get_by_role("group", name="Payload")).to_contain_text(CANARY_NAME)
            hidden = item.get_by_role("region", name="Protected fields")
            await expect(hidden).to_contain_text(PASSPORT)
            await expect(hidden).to_contain_text("masked")
            assert CANARY_PASSPORT not in await page.content()
            await screenshot_of(item, "privacy-masked")

            await hidden.get_by_role("button", name=f"Reveal {PASSPORT}").click()
            reason = hidden.get_by_role("textbox", name=f"Reason for revealing {PASSPORT}")
            await expect(reason).to_be_focused()
            await hidden.get_by_role("button", name="Show value").click()
            await expect(hidden).to_contain_text("Say why you need to see it.")
            assert CANARY_PASSPORT not in await page.content()
            await reason.fill("Name check against the passport")
            await hidden.get_by_role("button", name="Show value").click()
            await expect(hidden).to_contain_text(CANARY_PASSPORT)
            await expect(hidden).to_contain_text("revealed, logged")
            await screenshot_of(item, "privacy-revealed")

        rows = await owner_conn.fetch(
            "SELECT actor, path, reason FROM privacy_log WHERE action = 'reveal'"
        )
        assert [tuple(r) for r in rows] == [("rita", PASSPORT, "Name check against the passport")]
