"""revealField over HTTP: a reason and a role the policy names, the access log written
before the value is answered (and nothing answered when it cannot be), exactly once."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.domain.privacy.policy import PrivacyPolicy
from tests.privacy.shown import (
    CANARY_BIRTH,
    CANARY_NAME,
    CANARY_PASSPORT,
    REVEAL,
    Call,
    People,
    claim,
    enqueue,
)

PASSPORT = "applicant.passport_number"
LOGGED = "SELECT * FROM privacy_log WHERE action = 'reveal' ORDER BY id"

ACCESS = """
query($since: DateTime, $until: DateTime) {
  queue(name: "kyc") {
    fieldAccess(since: $since, until: $until) {
      __typename
      ... on FieldAccessReport { queue rows { reviewer path reveals lastRevealedAt } }
      ... on Error { message }
    }
  }
}
"""


async def item_id(call: Call, people: People) -> str:
    [item] = await enqueue(call, people, "app-1")
    return str(item["id"])


async def reveal(
    call: Call, token: str, item: str, path: str = PASSPORT, reason: str = "name check failed"
) -> tuple[dict[str, Any], bytes]:
    answer = await call(token, REVEAL, itemId=item, path=path, reason=reason)
    return answer.data["revealField"], answer.raw


async def test_a_reviewer_reveals_with_a_reason_and_it_is_logged_once(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)

    result, raw = await reveal(call, people.reviewer, item)

    assert result["__typename"] == "RevealedField", result
    assert (result["itemId"], result["path"], result["class"], result["value"]) == (
        item,
        PASSPORT,
        "SENSITIVE",
        CANARY_PASSPORT,
    )
    assert CANARY_PASSPORT.encode() in raw
    [row] = await owner_conn.fetch(LOGGED)
    assert (row["actor"], row["actor_role"], row["queue"], row["item_id"]) == (
        "rita",
        "reviewer",
        "kyc",
        int(item),
    )
    assert (row["subject_ref"], row["path"], row["reason"]) == (
        "cust-9",
        PASSPORT,
        "name check failed",
    )
    assert row["at"].isoformat() == result["revealedAt"].replace("Z", "+00:00")
    # The log names the path and the reason, never the value.
    assert CANARY_PASSPORT not in str(dict(row))


async def test_a_personal_value_may_be_revealed_too(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    item = await item_id(call, people)

    result, _ = await reveal(call, people.reviewer, item, path="applicant.date_of_birth")

    assert (result["__typename"], result["value"]) == ("RevealedField", CANARY_BIRTH)


@pytest.mark.parametrize("reason", ["", "   ", "x" * 1001])
async def test_a_reveal_without_a_reason_is_refused_and_not_logged(
    call: Call,
    people: People,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
    reason: str,
) -> None:
    item = await item_id(call, people)

    result, raw = await reveal(call, people.reviewer, item, reason=reason)

    assert (result["__typename"], result["field"]) == ("InvalidInput", "reason")
    assert CANARY_PASSPORT.encode() not in raw
    assert await owner_conn.fetch(LOGGED) == []


async def test_roles_the_policy_does_not_name_and_other_queues_are_refused(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)

    manager, manager_raw = await reveal(call, people.manager, item)
    outsider, outsider_raw = await reveal(call, people.outsider, item)
    public, _ = await reveal(call, people.reviewer, item, path="risk_score")
    unknown, _ = await reveal(call, people.reviewer, item, path="applicant.nickname")

    assert manager["__typename"] == "NotPermitted", manager
    assert outsider["__typename"] == "NotFound", outsider
    assert (public["__typename"], public["field"]) == ("InvalidInput", "path")
    assert (unknown["__typename"], unknown["field"]) == ("InvalidInput", "path")
    for raw in (manager_raw, outsider_raw):
        assert CANARY_PASSPORT.encode() not in raw
    assert await owner_conn.fetch(LOGGED) == []


async def test_nothing_is_revealed_when_the_log_cannot_be_written(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)
    await owner_conn.execute(
        """
        CREATE FUNCTION test_refuse_log() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the access log is unavailable'; END $$;
        CREATE TRIGGER test_refuse_log BEFORE INSERT ON privacy_log
            FOR EACH ROW EXECUTE FUNCTION test_refuse_log();
        """
    )

    answer = await call(people.reviewer, REVEAL, itemId=item, path=PASSPORT, reason="check")

    assert answer.body["data"] is None or answer.body["data"]["revealField"] is None
    assert answer.body["errors"], answer.body
    assert CANARY_PASSPORT.encode() not in answer.raw
    assert await owner_conn.fetch(LOGGED) == []

    await owner_conn.execute("DROP TRIGGER test_refuse_log ON privacy_log")
    result, _ = await reveal(call, people.reviewer, item)
    assert result["value"] == CANARY_PASSPORT
    assert len(await owner_conn.fetch(LOGGED)) == 1


async def test_an_erased_field_answers_that_it_was_erased(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)
    await owner_conn.execute(
        "UPDATE item_fields SET erased_at = now(), salt = NULL, nonce = NULL, ciphertext = NULL"
        " WHERE item_id = $1 AND path = $2",
        int(item),
        PASSPORT,
    )

    result, _ = await reveal(call, people.reviewer, item)

    assert (result["__typename"], result["itemId"], result["path"]) == (
        "FieldErased",
        item,
        PASSPORT,
    )


async def test_a_shredded_key_answers_erased_and_the_attempt_is_logged(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)
    await owner_conn.execute(
        "UPDATE privacy_subject_keys SET wrapped_key = NULL, kek_id = NULL, shredded_at = now()"
        " WHERE subject_ref = 'cust-9'"
    )

    result, raw = await reveal(call, people.reviewer, item)

    assert result["__typename"] == "FieldErased", result
    assert CANARY_PASSPORT.encode() not in raw
    assert len(await owner_conn.fetch(LOGGED)) == 1


async def test_a_restricted_subject_is_revealed_to_compliance_only(
    call: Call, people: People, kyc_policy: PrivacyPolicy, owner_conn: asyncpg.Connection
) -> None:
    item = await item_id(call, people)
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-9'"
    )

    refused, raw = await reveal(call, people.reviewer, item)
    claimed, claim_raw = await claim(call, people.reviewer)
    granted, _ = await reveal(call, people.compliance, item)

    assert refused["__typename"] == "NotPermitted", refused
    assert CANARY_PASSPORT.encode() not in raw
    assert CANARY_NAME.encode() not in claim_raw
    assert {f["state"] for f in claimed["item"]["fields"]} == {"WITHHELD"}
    assert (granted["__typename"], granted["value"]) == ("RevealedField", CANARY_PASSPORT)
    assert [r["actor"] for r in await owner_conn.fetch(LOGGED)] == ["cora"]


async def test_the_access_report_counts_reveals_per_reviewer_and_path(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    item = await item_id(call, people)
    for token, path in (
        (people.reviewer, PASSPORT),
        (people.reviewer, PASSPORT),
        (people.reviewer, "applicant.name"),
        (people.other_reviewer, PASSPORT),
    ):
        result, _ = await reveal(call, token, item, path=path)
        assert result["__typename"] == "RevealedField", result

    report = (await call(people.manager, ACCESS)).data["queue"]["fieldAccess"]
    refused = (await call(people.reviewer, ACCESS)).data["queue"]["fieldAccess"]
    empty = (
        await call(
            people.manager, ACCESS, since="2020-01-01T00:00:00Z", until="2020-02-01T00:00:00Z"
        )
    ).data["queue"]["fieldAccess"]
    backwards = (
        await call(
            people.manager, ACCESS, since="2020-02-01T00:00:00Z", until="2020-01-01T00:00:00Z"
        )
    ).data["queue"]["fieldAccess"]

    assert report["__typename"] == "FieldAccessReport", report
    assert [(r["reviewer"], r["path"], r["reveals"]) for r in report["rows"]] == [
        ("rita", "applicant.name", 1),
        ("rita", PASSPORT, 2),
        ("rob", PASSPORT, 1),
    ]
    assert refused["__typename"] == "NotPermitted"
    assert empty["rows"] == []
    assert backwards["__typename"] == "InvalidInput"
    compliance = (await call(people.compliance, ACCESS)).data["queue"]["fieldAccess"]
    assert len(compliance["rows"]) == 3
