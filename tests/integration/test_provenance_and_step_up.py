"""Every decision says how its maker authenticated (the decision row, the timeline, the
audit pack), the application role cannot rewrite that record, and a queue that asks for a
recent sign-in refuses an older or unknown one without touching the lease."""

from __future__ import annotations

from datetime import timedelta

import asyncpg
import pytest

from server.domain.failures import ReauthenticationRequired
from server.domain.model import CredentialKind, Decision
from server.domain.quality.audit import Viewer, read_packs
from server.domain.review.decisions import submit_decision
from server.domain.review.queues import QueueSettings, configure_queue
from server.domain.timeline.events import PageKey, TimelineKind, events_pages
from server.store.database import Database
from tests.conftest import ADMIN
from tests.integration.helpers import claimed_one, item_row, verdict_for
from tests.integration.identity_helpers import ISSUER, RULE, signed_in, with_cli_token


async def test_the_decision_timeline_and_audit_pack_say_how_the_decider_authenticated(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    alice, _, session = await signed_in(db, "alice")
    held = await claimed_one(db, kyc_queue, alice)

    decided = await submit_decision(db, alice, verdict_for(held))

    assert isinstance(decided, Decision)
    assert decided.authentication_id == alice.authentication_id is not None
    row = await owner_conn.fetchrow(
        "SELECT a.kind, a.issuer, a.subject, a.session_id, a.rules FROM review_decisions d"
        " JOIN authentications a ON a.id = d.authentication_id WHERE d.id = $1",
        decided.id,
    )
    assert row is not None
    assert tuple(row) == ("session", ISSUER, "alice", session.id, [RULE])
    page = PageKey(held.item.id, None, 100)
    [event] = [e for e in (await events_pages(db, [page]))[page] if e.kind is TimelineKind.DECIDED]
    assert event.authentication_id == alice.authentication_id
    pack = (await read_packs(db, [held.item.id], Viewer()))[held.item.id]["pack"]
    [decision] = pack["decisions"]
    shown = decision["authentication"]
    assert (shown["kind"], shown["issuer"], shown["subject"], shown["rules"]) == (
        "session",
        ISSUER,
        "alice",
        [RULE],
    )
    decided_entry = next(e for e in pack["timeline"] if e["kind"] == "decided")
    assert decided_entry["authentication"]["subject"] == "alice"


async def test_the_application_role_cannot_rewrite_an_authentication(
    app_conn: asyncpg.Connection, db: Database
) -> None:
    await signed_in(db, "bob")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_conn.execute("UPDATE authentications SET subject = 'mallory'")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_conn.execute("DELETE FROM authentications")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_conn.execute("UPDATE review_decisions SET authentication_id = NULL")


async def _step_up_queue(db: Database, kyc_queue: str, **settings: object) -> None:
    done = await configure_queue(db, ADMIN, QueueSettings(kyc_queue, **settings))  # type: ignore[arg-type]
    assert not hasattr(done, "message"), done


@pytest.mark.parametrize(
    ("signed_in_ago", "acr", "cli"),
    [
        (timedelta(minutes=10), None, False),  # too old
        (timedelta(seconds=5), "pwd", False),  # another acr
        (timedelta(seconds=5), "mfa", True),  # a CLI token proves no sign-in
    ],
    ids=["stale", "wrong-acr", "cli-token"],
)
async def test_a_stale_or_unproven_sign_in_is_refused_and_the_lease_kept(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    signed_in_ago: timedelta,
    acr: str | None,
    cli: bool,
) -> None:
    await _step_up_queue(db, kyc_queue, require_auth_within_seconds=300, require_acr="mfa")
    carol, _, _ = await signed_in(db, "carol", signed_in_ago=signed_in_ago, acr=acr)
    if cli:
        carol = await with_cli_token(db, carol)
    held = await claimed_one(db, kyc_queue, carol)
    before = await item_row(owner_conn, held.item.id)

    refused = await submit_decision(db, carol, verdict_for(held))

    assert isinstance(refused, ReauthenticationRequired), refused
    assert (refused.required_within_seconds, refused.acr) == (300, "mfa")
    assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 0
    after = await item_row(owner_conn, held.item.id)
    assert (after["lease_token"], after["lease_expires_at"]) == (
        before["lease_token"],
        before["lease_expires_at"],
    )
    # Signed in again, with the lease it kept: accepted.
    fresh, _, _ = await signed_in(db, "carol", acr="mfa")
    assert isinstance(await submit_decision(db, fresh, verdict_for(held)), Decision)


async def test_a_fresh_sign_in_is_accepted_and_a_queue_without_the_setting_asks_nothing(
    db: Database, kyc_queue: str
) -> None:
    dave, _, _ = await signed_in(db, "dave", signed_in_ago=timedelta(hours=5))
    cli = await with_cli_token(db, dave)
    assert cli.authentication is not None
    assert cli.authentication.kind is CredentialKind.CLI_TOKEN
    held = await claimed_one(db, kyc_queue, cli, key="cust-a")
    assert isinstance(await submit_decision(db, cli, verdict_for(held)), Decision)

    await _step_up_queue(db, kyc_queue, require_auth_within_seconds=60)
    fresh, _, _ = await signed_in(db, "dave", signed_in_ago=timedelta(seconds=2))
    held = await claimed_one(db, kyc_queue, fresh, key="cust-b")
    assert isinstance(await submit_decision(db, fresh, verdict_for(held)), Decision)
    # 0 clears the setting again.
    await _step_up_queue(db, kyc_queue, require_auth_within_seconds=0)
    held = await claimed_one(db, kyc_queue, cli, key="cust-c")
    assert isinstance(await submit_decision(db, cli, verdict_for(held)), Decision)
