"""A demo: two KYC queues, their reason codes, a QA queue sampling a fifth of kyc's
decisions, 300 applications, a supplier-onboarding
workflow with a few open exceptions, and a token per role.

Seeding goes through the domain functions as the service's own role, so the demo exercises
the same permission checks and constraints as real traffic. Running it again changes
nothing but the tokens: each run mints a fresh set, because a token is only shown once, and
revokes the set the run before it minted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from server.config import Settings
from server.domain.exceptions import actions, workflows
from server.domain.exceptions.records import Consequence, ExceptionAction
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.identity.tokens import create_token, revoke_demo_tokens
from server.domain.model import Principal, Role, Verdict
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.queues import (
    QueueSettings,
    SecondReviewSettings,
    configure_queue,
    define_reason_code,
)
from server.store.database import Database, connect
from server.store.queries import Queries

KYC = "kyc"
ESCALATIONS = "kyc-escalations"
# A rejection in kyc closes an application: it takes a second person before it takes effect.
SECOND_REVIEW = "kyc-second-review"
SECOND_REVIEW_VERDICTS = (Verdict.REJECT,)
# QA sampling: a fifth of kyc's approve and reject decisions are copied here for a check.
KYC_QA = "kyc-qa"
KYC_QA_SAMPLE_RATE = 0.2
ITEM_COUNT = 300
SUPPLIER_WORKFLOW = "supplier_onboarding"
SUPPLIER_OPS = "supplier-ops"
PROCUREMENT_LEADS = "procurement-leads"
SUPPLIER_APPROVALS = "supplier-approvals"

ADMIN = Principal("ada-admin", Role.ADMIN, frozenset())
INTEGRATION = Principal("kyc-provider", Role.INTEGRATION, frozenset())
ERP = Principal("erp-onboarding", Role.INTEGRATION, frozenset())

REASON_CODES = (
    ("documents_ok", "Documents verified, identity matches", Verdict.APPROVE),
    ("name_mismatch", "Name on the document does not match the application", Verdict.REJECT),
    ("document_expired", "Identity document has expired", Verdict.REJECT),
    ("sanctions_hit", "Possible sanctions or PEP match", Verdict.ESCALATE),
    ("needs_senior", "Needs a senior reviewer's judgement", Verdict.ESCALATE),
)

# The QA queue's catalogue: a code for APPROVE is given when agreeing with the decision
# checked, one for REJECT when disagreeing (recordQaResult).
QA_REASON_CODES = (
    ("qa_agree", "Right call, well documented", Verdict.APPROVE, False),
    ("qa_wrong_outcome", "The other outcome was right", Verdict.REJECT, True),
    ("qa_missing_evidence", "Right call, but the evidence does not show it", Verdict.REJECT, True),
)

# (environment variable, user, role, queues); the reviewer comes last so that the last line
# of output is the token a reader needs first. The QA reviewer checks the reviewer's
# sampled decisions: a QA copy is never handed to its own decider.
DEMO_TOKENS = (
    ("CASEWORK_INTEGRATION_TOKEN", INTEGRATION.user, Role.INTEGRATION, ()),
    ("CASEWORK_APPROVER_TOKEN", "ann-approver", Role.APPROVER, ()),
    ("CASEWORK_ADMIN_TOKEN", ADMIN.user, Role.ADMIN, ()),
    ("CASEWORK_MANAGER_TOKEN", "max-manager", Role.MANAGER, ()),
    # Two compliance officers: one requests an erasure, the other approves it (four-eyes).
    ("CASEWORK_COMPLIANCE_TOKEN", "cora-compliance", Role.COMPLIANCE, ()),
    ("CASEWORK_SECOND_COMPLIANCE_TOKEN", "colm-compliance", Role.COMPLIANCE, ()),
    # Confirms or overrides the rejections the reviewer below makes in kyc.
    ("CASEWORK_SECOND_REVIEWER_TOKEN", "sam-second-reviewer", Role.REVIEWER, (SECOND_REVIEW,)),
    ("CASEWORK_QA_REVIEWER_TOKEN", "quinn-qa", Role.REVIEWER, (KYC_QA,)),
    (
        "CASEWORK_REVIEWER_TOKEN",
        "rita-reviewer",
        Role.REVIEWER,
        (KYC, ESCALATIONS, SUPPLIER_OPS, PROCUREMENT_LEADS),
    ),
)

# (supplier, legal name on record, what blocks, consequence, reason)
SUPPLIER_EXCEPTIONS = (
    ("SUP-1042", "Acme Trading Ltd", "The certificate names Acme Holdings Ltd.",
     Consequence.HIGH, "entity_mismatch"),
    ("SUP-1077", "Nordlicht GmbH", "The VAT certificate names Nordlicht Handels GmbH.",
     Consequence.MEDIUM, "entity_mismatch"),
    ("SUP-1103", "Oceanic Freight SA", "The bank letter names Oceanic Logistics SA.",
     Consequence.CRITICAL, "entity_mismatch"),
    ("SUP-1120", "Verde Foods BV", "No sign-off from category management for a new supplier.",
     Consequence.LOW, "missing_approval"),
)  # fmt: skip

GIVEN_NAMES = (
    "Amara", "Björn", "Carmen", "Dmitri", "Elif", "Farah", "Giulia", "Hiroshi", "Ines",
    "Jonas", "Kwame", "Leila", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa",
    "Sanjay", "Tomasz", "Ursula", "Vikram", "Wen", "Yasmin", "Zoltan",
)  # fmt: skip
FAMILY_NAMES = (
    "Adeyemi", "Bergström", "Castillo", "Dubois", "Eriksen", "Fernandes", "García", "Haddad",
    "Ivanova", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "O'Brien", "Petrov",
    "Rossi", "Schmidt", "Tanaka", "Okafor", "Van der Berg", "Wójcik", "Yilmaz", "Zhang",
)  # fmt: skip
COUNTRIES = ("DE", "FR", "ES", "IT", "NL", "PL", "SE", "GB", "IE", "PT", "NG", "IN", "BR", "TR")
DOCUMENT_TYPES = ("passport", "national_id", "driving_licence", "residence_permit")
FIRST_SUBMISSION = datetime(2025, 3, 3, 8, 0, 0)


@dataclass(frozen=True)
class DemoSeed:
    items_created: int
    # (environment variable, token), in the order they should be printed.
    tokens: list[tuple[str, str]]
    # Live tokens of earlier demo runs, revoked by this one.
    tokens_revoked: int = 0

    def exports(self) -> list[str]:
        return [f"export {variable}={token}" for variable, token in self.tokens]


async def seed_demo(owner_dsn: str, app_dsn: str, *, queries_dir: Path | None = None) -> DemoSeed:
    queries = Queries(queries_dir or Settings.from_env().db_dir / "queries")
    app_conn = await connect(app_dsn)
    try:
        app_db = Database(app_conn, queries)
        await _configure_queues(app_db)
        items_created = await _enqueue_applications(app_db)
        await _configure_supplier_onboarding(app_db)
        await _raise_supplier_exceptions(app_db)
    finally:
        await app_conn.close()
    # Only the owner role may write tokens. The last run's tokens are revoked as the new
    # ones are minted, in one transaction, so runs do not pile up live demo tokens.
    owner_conn = await connect(owner_dsn)
    try:
        async with Database(owner_conn, queries).transaction() as owner_db:
            revoked = await revoke_demo_tokens(owner_db)
            tokens = [
                (
                    variable,
                    await create_token(
                        owner_db, user=user, role=role, queues=list(queues), demo=True
                    ),
                )
                for variable, user, role, queues in DEMO_TOKENS
            ]
    finally:
        await owner_conn.close()
    return DemoSeed(items_created=items_created, tokens=tokens, tokens_revoked=revoked)


def _expect_success(result: object, action: str) -> None:
    # The demo's own data is fixed, so a refusal here is a bug, not bad input.
    if isinstance(result, NotPermitted | InvalidInput):
        raise RuntimeError(f"demo seed: {action} was refused: {result.message}")


async def _configure_queues(db: Database) -> None:
    # The escalation target must exist before a queue can point at it.
    for settings in (
        QueueSettings(ESCALATIONS, lease_ttl_seconds=600),
        QueueSettings(
            KYC,
            lease_ttl_seconds=300,
            max_abandons=3,
            escalation_queue=ESCALATIONS,
            second_review=SecondReviewSettings(SECOND_REVIEW_VERDICTS, queue=SECOND_REVIEW),
            qa_sample_rate=KYC_QA_SAMPLE_RATE,
            qa_queue=KYC_QA,
        ),
    ):
        _expect_success(await configure_queue(db, ADMIN, settings), f"queue {settings.name}")
    for queue in (KYC, ESCALATIONS):
        for code, label, verdict in REASON_CODES:
            defined = await define_reason_code(
                db, ADMIN, queue=queue, code=code, label=label, verdicts=[verdict]
            )
            _expect_success(defined, f"reason code {queue}/{code}")
    for code, label, verdict, requires_note in QA_REASON_CODES:
        defined = await define_reason_code(
            db,
            ADMIN,
            queue=KYC_QA,
            code=code,
            label=label,
            verdicts=[verdict],
            requires_note=requires_note,
        )
        _expect_success(defined, f"reason code {KYC_QA}/{code}")


async def _configure_supplier_onboarding(db: Database) -> None:
    for name in (SUPPLIER_OPS, PROCUREMENT_LEADS, SUPPLIER_APPROVALS):
        _expect_success(await configure_queue(db, ADMIN, QueueSettings(name)), f"queue {name}")
    configured = await workflows.configure_workflow(
        db,
        ADMIN,
        workflows.WorkflowSettings(SUPPLIER_WORKFLOW, approval_queue=SUPPLIER_APPROVALS),
    )
    _expect_success(configured, "workflow supplier_onboarding")
    hours = 3600
    for code, label, allowed in (
        ("entity_mismatch", "A document names another legal entity", list(ExceptionAction)),
        (
            "missing_approval",
            "A required approval is missing",
            [
                ExceptionAction.ATTACH_EVIDENCE,
                ExceptionAction.CLOSE_EXCEPTION,
                ExceptionAction.REOPEN_EXCEPTION,
            ],
        ),
    ):
        defined = await workflows.define_exception_reason(
            db,
            ADMIN,
            workflows.ReasonDefinition(
                workflow=SUPPLIER_WORKFLOW,
                code=code,
                label=label,
                owner_role=SUPPLIER_OPS,
                escalation_role=PROCUREMENT_LEADS,
                allowed_actions=allowed,
                due_seconds={
                    Consequence.LOW: 72 * hours,
                    Consequence.MEDIUM: 24 * hours,
                    Consequence.HIGH: 4 * hours,
                    Consequence.CRITICAL: 1 * hours,
                },
            ),
        )
        _expect_success(defined, f"exception reason {code}")


async def _raise_supplier_exceptions(db: Database) -> None:
    # Raising is idempotent while open: a second seed counts recurrences, adds nothing.
    for supplier, legal_name, detail, consequence, reason in SUPPLIER_EXCEPTIONS:
        raised = await actions.raise_exception(
            db,
            ERP,
            actions.RaiseInput(
                workflow=SUPPLIER_WORKFLOW,
                source_record_id=supplier,
                reason_code=reason,
                detail=detail,
                consequence=consequence,
                completed_steps=["collect_documents", "verify_bank_account"],
                blocked_step="verify_legal_entity",
                evidence=[f"docstore://suppliers/{supplier}/onboarding-pack.pdf"],
                context={"recordLegalName": legal_name},
            ),
        )
        _expect_success(raised, f"exception for {supplier}")


async def _enqueue_applications(db: Database) -> int:
    rng = random.Random(20250303)
    items = [_application(rng, number) for number in range(1, ITEM_COUNT + 1)]
    enqueued = await enqueue_items(db, INTEGRATION, KYC, items)
    if isinstance(enqueued, NotPermitted | InvalidInput):
        raise RuntimeError(f"demo seed: enqueueing was refused: {enqueued.message}")
    return sum(1 for item in enqueued if item.created)


def _application(rng: random.Random, number: int) -> NewItem:
    """One KYC application as a provider would send it: mostly clean, some not."""
    given, family = rng.choice(GIVEN_NAMES), rng.choice(FAMILY_NAMES)
    nationality = rng.choice(COUNTRIES)
    submitted_at = FIRST_SUBMISSION + timedelta(minutes=17 * number + rng.randint(0, 16))
    born = date(1950, 1, 1) + timedelta(days=rng.randint(0, 365 * 55))
    # About one in ten documents is expired, one in eight has a name that differs.
    expires_in_days = rng.randint(-400, -1) if rng.random() < 0.1 else rng.randint(30, 3650)
    name_on_document = f"{given} {family}"
    if rng.random() < 0.125:
        name_on_document = f"{given[0]}. {rng.choice(FAMILY_NAMES)}"
    sanctions = "possible_match" if rng.random() < 0.05 else "clear"
    risk_score = min(100, int(rng.betavariate(2, 6) * 100) + (40 if sanctions != "clear" else 0))
    payload: dict[str, Any] = {
        "application_id": f"APP-{2025_000 + number}",
        "applicant": {
            "name": f"{given} {family}",
            "date_of_birth": born.isoformat(),
            "nationality": nationality,
            "country_of_residence": nationality if rng.random() < 0.8 else rng.choice(COUNTRIES),
        },
        "document": {
            "type": rng.choice(DOCUMENT_TYPES),
            "issuing_country": nationality,
            "number": "".join(rng.choices("ABCDEFGHJKLMNPRSTUVWXYZ0123456789", k=9)),
            "name_on_document": name_on_document,
            "expires_on": (submitted_at.date() + timedelta(days=expires_in_days)).isoformat(),
        },
        "checks": {
            "face_match": round(rng.uniform(0.55, 0.99), 2),
            "liveness": "pass" if rng.random() < 0.95 else "inconclusive",
            "sanctions_screening": sanctions,
        },
        "risk_score": risk_score,
        "submitted_at": submitted_at.isoformat() + "Z",
    }
    # Riskier applications are claimed first.
    return NewItem(external_key=f"demo-{number:04d}", payload=payload, priority=risk_score)
