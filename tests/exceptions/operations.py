"""GraphQL operations and small drivers shared by the exception tests."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import GraphQL

# A workflow's measures that the dashboards and the measures tests both ask for.
WORKFLOW_MEASURE_FIELDS = """
      ageByReason { reasonCode consequence open oldestAgeSeconds p50AgeSeconds }
      repeats { reasonCode raised recurrences sourcesWithRepeats repeatShare }
      redrives { requested succeeded failed successRate }
      closures { corrected rejected duplicate obsolete total }
      reopened reopenRate
      approvalSeconds { samples p50 p90 p99 max }
      handlingSeconds { samples p50 p90 p99 max }
"""

SETUP_SUPPLIER_WORKFLOW = """
mutation {
  ops: configureQueue(input: {name: "supplier-ops"}) { __typename }
  leads: configureQueue(input: {name: "procurement-leads"}) { __typename }
  approvals: configureQueue(input: {name: "supplier-approvals"}) { __typename }
  workflow: configureWorkflow(input: {name: "supplier_onboarding",
                                      approvalQueue: "supplier-approvals"}) { __typename }
  mismatch: defineExceptionReason(input: {
    workflow: "supplier_onboarding", code: "entity_mismatch",
    label: "Document names another legal entity",
    ownerRole: "supplier-ops", escalationOwnerRole: "procurement-leads",
    allowedActions: [ATTACH_EVIDENCE, SUBMIT_CORRECTION, APPROVE_CORRECTION,
                     REJECT_CORRECTION, REQUEST_REDRIVE, REPORT_REDRIVE_RESULT,
                     CLOSE_EXCEPTION, REOPEN_EXCEPTION],
    dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
  }) { __typename }
  missing: defineExceptionReason(input: {
    workflow: "supplier_onboarding", code: "missing_approval",
    label: "A required approval is missing",
    ownerRole: "supplier-ops", escalationOwnerRole: "procurement-leads",
    allowedActions: [ATTACH_EVIDENCE, CLOSE_EXCEPTION, REOPEN_EXCEPTION],
    dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
  }) { __typename }
}
"""

EXCEPTION_FIELDS = """
  id workflow sourceRecordId reasonCode detail blockedStep completedSteps staleSteps
  evidence context consequence state closure ownerRole owner escalationOwnerRole overdue
  dueAt attempts recurrences reopenCount version lastRejection allowedActions
  item { id queue state }
  currentCorrection { version changes correctedBy evidence staleSteps }
  redrive { key version resumeAfter succeeded }
  events { kind actor actorRole fromState toState version evidence detail redriveKey at }
"""

_ERROR_SPREADS = {
    "InvalidTransition": "... on InvalidTransition { state action allowedActions }",
    "AlreadyQueued": "... on AlreadyQueued { redriveKey }",
    "InvalidInput": "... on InvalidInput { field }",
    "StaleLease": "... on StaleLease { itemId }",
    "NotPermitted": "",
}


def error_fields(*types: str) -> str:
    """Spreads for the errors a union holds (GraphQL refuses a spread on any other)."""
    return "... on Error { message }\n" + "\n".join(_ERROR_SPREADS[t] for t in types)


RAISE = f"""
mutation($input: RaiseExceptionInput!) {{
  raiseException(input: $input) {{
    __typename
    ... on ExceptionRaised {{ created exception {{ {EXCEPTION_FIELDS} }} }}
    {error_fields("NotPermitted", "InvalidInput")}
  }}
}}
"""

CLAIM = """
mutation($queue: String!) {
  claimNext(queue: $queue) {
    __typename
    ... on Claim { leaseToken item { id exception { id state } } }
    ... on Error { message }
  }
}
"""

RELEASE = """
mutation($itemId: ID!, $leaseToken: String!) {
  releaseLease(itemId: $itemId, leaseToken: $leaseToken) { __typename }
}
"""


_UNDER_CLAIM_ERRORS = ("StaleLease", "InvalidTransition", "NotPermitted", "InvalidInput")


def action(name: str, input_type: str, payload: str, *errors: str) -> str:
    return f"""
mutation($input: {input_type}!) {{
  result: {name}(input: $input) {{
    __typename
    ... on {payload}
    {error_fields(*errors)}
  }}
}}
"""


UPDATED = f"ExceptionUpdated {{ exception {{ {EXCEPTION_FIELDS} }} }}"
ATTACH_EVIDENCE = action("attachEvidence", "AttachEvidenceInput", UPDATED, *_UNDER_CLAIM_ERRORS)
SUBMIT_CORRECTION = action(
    "submitCorrection", "SubmitCorrectionInput", UPDATED, *_UNDER_CLAIM_ERRORS
)
APPROVE_CORRECTION = action(
    "approveCorrection", "ApproveCorrectionInput", UPDATED, *_UNDER_CLAIM_ERRORS
)
REJECT_CORRECTION = action(
    "rejectCorrection", "RejectCorrectionInput", UPDATED, *_UNDER_CLAIM_ERRORS
)
CLOSE_EXCEPTION = action("closeException", "CloseExceptionInput", UPDATED, *_UNDER_CLAIM_ERRORS)
REOPEN_EXCEPTION = action("reopenException", "ReopenExceptionInput", UPDATED, *_UNDER_CLAIM_ERRORS)
REQUEST_REDRIVE = action(
    "requestRedrive",
    "RequestRedriveInput",
    f"RedriveQueued {{ redriveKey exception {{ {EXCEPTION_FIELDS} }} }}",
    "AlreadyQueued",
    "InvalidTransition",
    "NotPermitted",
    "InvalidInput",
)
REPORT_REDRIVE_RESULT = action(
    "reportRedriveResult",
    "ReportRedriveResultInput",
    f"RedriveResultRecorded {{ alreadyReported exception {{ {EXCEPTION_FIELDS} }} }}",
    "InvalidTransition",
    "NotPermitted",
    "InvalidInput",
)

# A registry extract: the evidence a reviewer attaches in the walk-through.
REGISTRY_EVIDENCE = "registry://companies-house/09876543"

EXCEPTION = f"""
query($id: ID!) {{ exception(id: $id) {{ {EXCEPTION_FIELDS} }} }}
"""


def mismatch_input(source_record_id: str = "SUP-1042", **overrides: Any) -> dict[str, Any]:
    """The walk-through's exception: the uploaded certificate names another legal entity."""
    raised: dict[str, Any] = {
        "workflow": "supplier_onboarding",
        "sourceRecordId": source_record_id,
        "reasonCode": "entity_mismatch",
        "detail": "The certificate of incorporation names Acme Holdings Ltd; the supplier "
        "record says Acme Trading Ltd.",
        "consequence": "HIGH",
        "completedSteps": ["collect_documents", "verify_bank_account"],
        "blockedStep": "verify_legal_entity",
        "evidence": ["docstore://suppliers/SUP-1042/certificate-of-incorporation.pdf"],
        "context": {
            "recordLegalName": "Acme Trading Ltd",
            "documentLegalName": "Acme Holdings Ltd",
        },
    }
    raised.update(overrides)
    return raised


async def run(gql: GraphQL, token: str, operation: str, **variables: Any) -> dict[str, Any]:
    """Runs an operation whose one root field is the result; returns that result."""
    body = await gql(token, operation, **variables)
    assert "errors" not in body, body
    [result] = body["data"].values()
    assert isinstance(result, dict), body
    return result


def under_claim(exception_id: str, lease_token: str, **fields: Any) -> dict[str, Any]:
    """The input of an action taken under a claim on the exception (attach, correct,
    approve, reject, close): its id, the claim's lease token and the action's own fields."""
    return {"exceptionId": exception_id, "leaseToken": lease_token, **fields}


def correction_input(
    exception_id: str,
    lease_token: str,
    *,
    changes: dict[str, Any],
    evidence: list[str],
    reason_code: str = "entity_mismatch",
    **fields: Any,
) -> dict[str, Any]:
    """A correction's input: the reason it answers, what it changes and what backs it."""
    return under_claim(
        exception_id,
        lease_token,
        reasonCode=reason_code,
        changes=changes,
        evidence=evidence,
        **fields,
    )


async def release(gql: GraphQL, token: str, item_id: str, lease_token: str) -> None:
    """Gives up a claim before its lease ends."""
    body = await gql(token, RELEASE, itemId=item_id, leaseToken=lease_token)
    assert body["data"]["releaseLease"]["__typename"] == "LeaseReleased", body


async def raise_mismatch(gql: GraphQL, token: str, **overrides: Any) -> dict[str, Any]:
    result = await run(gql, token, RAISE, input=mismatch_input(**overrides))
    assert result["__typename"] == "ExceptionRaised", result
    exception: dict[str, Any] = result["exception"]
    return exception


async def claim(gql: GraphQL, token: str, queue: str) -> dict[str, Any]:
    result = await run(gql, token, CLAIM, queue=queue)
    assert result["__typename"] == "Claim", result
    return result


async def claim_exception_as(gql: GraphQL, token: str, queue: str, exception_id: str) -> str:
    """Claims the next item of `queue`, which must be the exception's: the lease token."""
    claimed = await claim(gql, token, queue)
    assert claimed["item"]["exception"]["id"] == exception_id, claimed
    lease: str = claimed["leaseToken"]
    return lease


async def correct_as(
    gql: GraphQL, token: str, queue: str, exception_id: str, **correction: Any
) -> dict[str, Any]:
    """`token` claims the exception from `queue` and submits a correction (correction_input's
    arguments): the exception, awaiting approval."""
    lease = await claim_exception_as(gql, token, queue, exception_id)
    submitted = correction_input(exception_id, lease, **correction)
    corrected = await run(gql, token, SUBMIT_CORRECTION, input=submitted)
    assert corrected["__typename"] == "ExceptionUpdated", corrected
    assert corrected["exception"]["state"] == "AWAITING_APPROVAL", corrected
    exception: dict[str, Any] = corrected["exception"]
    return exception


async def approve_as(
    gql: GraphQL, token: str, queue: str, exception_id: str, version: int
) -> dict[str, Any]:
    """`token` claims the exception from the approval `queue` and approves `version`: the
    exception, waiting for its redrive."""
    lease = await claim_exception_as(gql, token, queue, exception_id)
    approval = under_claim(exception_id, lease, version=version)
    approved = await run(gql, token, APPROVE_CORRECTION, input=approval)
    assert approved["__typename"] == "ExceptionUpdated", approved
    assert approved["exception"]["state"] == "REDRIVE_PENDING", approved
    exception: dict[str, Any] = approved["exception"]
    return exception
