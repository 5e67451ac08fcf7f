"""Reading policy items: each field's state and value for a reader, and the payload made of
what that reader is shown."""

from __future__ import annotations

import dataclasses
from typing import Any

import asyncpg

from server.domain.model import Item, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import FieldClass, PrivacyPolicy
from server.domain.privacy.reading import FieldState, PolicyCache, read_items
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database, Row
from tests.conftest import INTEGRATION, MANAGER, TestDatabase, reviewer
from tests.privacy.shown import (
    CANARY_NAME,
    CANARY_PASSPORT,
    DECIDE,
    ITEM_VIEW,
    Call,
    People,
    applicant,
    claim,
    decision_input,
)
from tests.privacy.shown import enqueue as enqueue_over_http

REVIEWER = reviewer("rita", "kyc")


async def enqueue(
    db: Database, keyring: Keyring, *keys: str, subject: str = "cust-9"
) -> list[Item]:
    enqueued = await enqueue_items(
        db,
        INTEGRATION,
        "kyc",
        [NewItem(k, applicant(), subject_ref=subject) for k in keys],
        keyring,
    )
    assert isinstance(enqueued, list), enqueued
    return [answer.item for answer in enqueued]


async def test_a_reviewer_sees_personal_values_and_sensitive_ones_masked(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    states = {f.path: (f.field_class, f.state) for f in view.fields}
    assert states == {
        "applicant.date_of_birth": (FieldClass.PERSONAL, FieldState.VISIBLE),
        "applicant.name": (FieldClass.PERSONAL, FieldState.VISIBLE),
        "applicant.passport_number": (FieldClass.SENSITIVE, FieldState.MASKED),
        "document": (FieldClass.REFERENCE, FieldState.VISIBLE),
        "risk_score": (FieldClass.PUBLIC, FieldState.VISIBLE),
    }
    assert view.payload == {
        "applicant": {"date_of_birth": "1961-04-12", "name": CANARY_NAME},
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
    }
    assert CANARY_PASSPORT not in repr(view)
    assert view.field("applicant.passport_number").value is None  # type: ignore[union-attr]


async def test_a_manager_sees_public_and_reference_values_only(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    view = (await read_items(db, MANAGER, [item], keyring))[item.id]
    assert {f.path: f.state for f in view.fields} == {
        "applicant.date_of_birth": FieldState.WITHHELD,
        "applicant.name": FieldState.WITHHELD,
        "applicant.passport_number": FieldState.WITHHELD,
        "document": FieldState.VISIBLE,
        "risk_score": FieldState.VISIBLE,
    }
    assert view.payload == {"document": {"id": "doc-1", "sha256": "ab" * 32}, "risk_score": 71}


async def test_a_restricted_subject_is_withheld_but_from_compliance(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-9'"
    )
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    assert {f.state for f in view.fields} == {FieldState.WITHHELD}
    assert view.payload == {}
    seen = (await read_items(db, Role.COMPLIANCE, [item], keyring))[item.id]
    assert seen.payload["applicant"] == {"date_of_birth": "1961-04-12", "name": CANARY_NAME}
    assert seen.field("applicant.passport_number").state is FieldState.MASKED  # type: ignore[union-attr]


async def test_an_erased_field_reads_as_erased(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(db, keyring, "app-1")
    await owner_conn.execute(
        "UPDATE item_fields SET erased_at = now(), salt = NULL, nonce = NULL, ciphertext = NULL"
        " WHERE item_id = $1 AND path = 'applicant.name'",
        item.id,
    )
    view = (await read_items(db, REVIEWER, [item], keyring))[item.id]
    assert view.field("applicant.name").state is FieldState.ERASED  # type: ignore[union-attr]
    assert view.payload["applicant"] == {"date_of_birth": "1961-04-12"}


async def test_items_without_a_policy_cost_no_statement(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring, test_database: TestDatabase
) -> None:
    """A page of items without a policy is answered from the items: no statement is sent
    (here, to a connection already closed, which would refuse any)."""
    [item] = await enqueue(db, keyring, "app-1")
    plain = dataclasses.replace(item, policy_version=None, subject_ref=None, payload={"a": 1})
    conn = await asyncpg.connect(test_database.app_dsn)
    await conn.close()
    closed = Database(conn, db.queries)
    views = await read_items(closed, REVIEWER, [plain], keyring)
    assert views[item.id].payload == {"a": 1}
    assert views[item.id].fields == ()
    assert not views[item.id].has_policy


# --- Over HTTP -------------------------------------------------------------------------

ITEMS_PAGE = f"""
{{ queue(name: "kyc") {{ items {{ edges {{ node {{ {ITEM_VIEW} }} }} }} }} }}
"""


async def test_a_claim_shows_the_reviewer_personal_values_and_not_the_sensitive_one(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    await enqueue_over_http(call, people, "app-1")

    claimed, raw = await claim(call, people.reviewer)

    assert CANARY_NAME.encode() in raw
    assert CANARY_PASSPORT.encode() not in raw
    item = claimed["item"]
    assert item["payload"] == {
        "applicant": {"date_of_birth": "1961-04-12", "name": CANARY_NAME},
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
    }
    assert item["subjectRef"] == "cust-9"
    assert item["policyVersion"] == kyc_policy.version
    states = {f["path"]: (f["class"], f["state"], f["value"]) for f in item["fields"]}
    assert states == {
        "applicant.date_of_birth": ("PERSONAL", "VISIBLE", "1961-04-12"),
        "applicant.name": ("PERSONAL", "VISIBLE", CANARY_NAME),
        "applicant.passport_number": ("SENSITIVE", "MASKED", None),
        "document": ("REFERENCE", "VISIBLE", {"id": "doc-1", "sha256": "ab" * 32}),
        "risk_score": ("PUBLIC", "VISIBLE", 71),
    }
    assert all(len(f["digest"]) == 64 for f in item["fields"])


async def test_a_manager_is_shown_no_personal_value_by_default(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    await enqueue_over_http(call, people, "app-1", "app-2")

    answer = await call(people.manager, ITEMS_PAGE)

    assert CANARY_NAME.encode() not in answer.raw
    assert CANARY_PASSPORT.encode() not in answer.raw
    assert b"1961-04-12" not in answer.raw
    nodes = [edge["node"] for edge in answer.data["queue"]["items"]["edges"]]
    assert len(nodes) == 2
    for node in nodes:
        assert node["payload"] == {
            "document": {"id": "doc-1", "sha256": "ab" * 32},
            "risk_score": 71,
        }
        assert {f["path"]: f["state"] for f in node["fields"]} == {
            "applicant.date_of_birth": "WITHHELD",
            "applicant.name": "WITHHELD",
            "applicant.passport_number": "WITHHELD",
            "document": "VISIBLE",
            "risk_score": "VISIBLE",
        }


async def test_a_queue_without_a_policy_answers_as_before(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    await enqueue_over_http(call, people, "plain-1", queue="kyc-senior")

    claimed, raw = await claim(call, people.reviewer, queue="kyc-senior")

    item = claimed["item"]
    assert item["payload"] == applicant()
    assert (item["subjectRef"], item["policyVersion"], item["fields"]) == (None, None, None)
    assert CANARY_PASSPORT.encode() in raw  # nothing to mask: no policy


async def test_a_qa_copy_shows_the_fields_of_the_decision_it_checks(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    configured = await call(
        people.admin,
        'mutation { configureQueue(input: {name: "kyc", qaSampleRate: 1.0}) { __typename } }',
    )
    assert configured.data["configureQueue"]["__typename"] == "QueueConfigured"
    await enqueue_over_http(call, people, "app-1")
    claimed, _ = await claim(call, people.reviewer)
    decided = await call(
        people.reviewer, DECIDE, input=decision_input(claimed, "APPROVE", "documents_ok")
    )
    assert decided.data["submitDecision"]["__typename"] == "DecisionRecorded", decided.body

    copy, raw = await claim(call, people.checker, queue="kyc-qa")

    assert copy["item"]["id"] != claimed["item"]["id"]
    for key in ("payload", "subjectRef", "policyVersion", "fields"):
        assert copy["item"][key] == claimed["item"][key], key
    assert CANARY_PASSPORT.encode() not in raw


class CountingDatabase(Database):
    """The real database, recording the name of each statement it runs."""

    def __init__(self, db: Database) -> None:
        super().__init__(db._executor, db.queries)
        self.sent: list[str] = []

    async def fetch(self, query: Any, *args: Any, **kwargs: Any) -> list[Row]:
        self.sent.append(query.name)
        return await super().fetch(query, *args, **kwargs)


async def test_a_page_of_items_costs_two_statements_whatever_its_size(
    db: Database, kyc_policy: PrivacyPolicy, keyring: Keyring
) -> None:
    items = []
    for n in range(6):
        items += await enqueue(db, keyring, f"app-{n}", subject=f"cust-{n}")
    counting = CountingDatabase(db)
    policies = PolicyCache()

    views = await read_items(counting, REVIEWER, items, keyring, policies)

    assert counting.sent == ["reading_fields_get", "reading_policies_get"]
    assert {v.payload["applicant"]["name"] for v in views.values()} == {CANARY_NAME}
    # The policy version is known for the rest of the request.
    await read_items(counting, REVIEWER, items[:2], keyring, policies)
    assert counting.sent[2:] == ["reading_fields_get"]


async def test_an_escalated_item_keeps_the_policy_that_split_it(
    call: Call, people: People, kyc_policy: PrivacyPolicy
) -> None:
    """kyc-senior has no policy of its own: the item reads under kyc's version."""
    await enqueue_over_http(call, people, "app-1")
    claimed, _ = await claim(call, people.reviewer)
    escalated = await call(
        people.reviewer, DECIDE, input=decision_input(claimed, "ESCALATE", "needs_senior")
    )
    assert escalated.data["submitDecision"]["__typename"] == "DecisionRecorded", escalated.body

    senior, raw = await claim(call, people.reviewer, queue="kyc-senior")

    assert senior["item"]["id"] == claimed["item"]["id"]
    assert senior["item"]["payload"] == claimed["item"]["payload"]
    assert senior["item"]["fields"] == claimed["item"]["fields"]
    assert CANARY_PASSPORT.encode() not in raw
