"""Decision.disclosure: what the deciding reviewer was shown of a policy item, written by
the decision's own statement (migration 0027)."""

from __future__ import annotations

import asyncpg

from server.domain.privacy.policy import PrivacyPolicy
from tests.privacy.shown import DECIDE, REVEAL, Call, People, claim, decision_input, enqueue

DEFAULT_SHOWN = ["applicant.date_of_birth", "applicant.name", "document", "risk_score"]
PASSPORT = "applicant.passport_number"

DECISIONS = """
{ queue(name: "kyc") { decisions { edges { node { id disclosure { shown revealed } } } } } }
"""


async def test_a_decision_records_the_fields_shown_and_those_revealed(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(call, people, "app-1")
    claimed, _ = await claim(call, people.reviewer)
    # Another person's reveal is theirs, not what this reviewer saw.
    for token in (people.reviewer, people.other_reviewer):
        revealed = await call(
            token, REVEAL, itemId=claimed["item"]["id"], path=PASSPORT, reason="check"
        )
        assert revealed.data["revealField"]["__typename"] == "RevealedField"

    decided = await call(
        people.reviewer, DECIDE, input=decision_input(claimed, "APPROVE", "documents_ok")
    )

    recorded = decided.data["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", recorded
    assert recorded["decision"]["disclosure"] == {
        "shown": sorted([*DEFAULT_SHOWN, PASSPORT]),
        "revealed": [PASSPORT],
    }
    page = (await call(people.manager, DECISIONS)).data["queue"]["decisions"]["edges"]
    assert [edge["node"]["disclosure"] for edge in page] == [recorded["decision"]["disclosure"]]
    [row] = await owner_conn.fetch("SELECT * FROM decision_disclosures")
    assert row["decision_id"] == int(recorded["decision"]["id"])


async def test_without_a_reveal_only_the_default_fields_were_shown(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    await enqueue(call, people, "app-1", "app-2")
    first, _ = await claim(call, people.reviewer)
    second, _ = await claim(call, people.reviewer)
    # A reveal on another item is no part of this one's disclosure.
    await call(people.reviewer, REVEAL, itemId=second["item"]["id"], path=PASSPORT, reason="x")

    decided = await call(
        people.reviewer, DECIDE, input=decision_input(first, "REJECT", "name_mismatch")
    )

    assert decided.data["submitDecision"]["decision"]["disclosure"] == {
        "shown": DEFAULT_SHOWN,
        "revealed": [],
    }


async def test_an_erased_field_was_not_shown(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(call, people, "app-1")
    claimed, _ = await claim(call, people.reviewer)
    await owner_conn.execute(
        "UPDATE item_fields SET erased_at = now(), salt = NULL, nonce = NULL, ciphertext = NULL"
        " WHERE path = 'applicant.name'"
    )

    decided = await call(
        people.reviewer, DECIDE, input=decision_input(claimed, "APPROVE", "documents_ok")
    )

    shown = decided.data["submitDecision"]["decision"]["disclosure"]["shown"]
    assert shown == [p for p in DEFAULT_SHOWN if p != "applicant.name"]


async def test_a_decision_without_a_policy_has_no_disclosure(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(call, people, "plain-1", queue="kyc-senior")
    claimed, _ = await claim(call, people.reviewer, queue="kyc-senior")

    decided = await call(
        people.reviewer, DECIDE, input=decision_input(claimed, "APPROVE", "documents_ok")
    )

    assert decided.data["submitDecision"]["decision"]["disclosure"] is None
    assert await owner_conn.fetch("SELECT * FROM decision_disclosures") == []
