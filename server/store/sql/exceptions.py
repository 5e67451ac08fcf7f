"""The statements of db/queries/exceptions.sql, as symbols.

Generated from db/queries/exceptions.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _exception_raise(
    *,
    workflow: Any,
    source_record_id: Any,
    reason_code: Any,
    detail: Any,
    blocked_step: Any,
    completed_steps: Any,
    evidence: Any,
    context: Any,
    consequence: Any,
    actor: Any,
    actor_role: Any,
    decision_id: Any,
) -> None: ...


EXCEPTION_RAISE = Query("exception_raise", _exception_raise)
"""db/queries/exceptions.sql:10

:decision_id is for the apply_decision workflow only (NULL otherwise).
"""


def _exception_attach_evidence(
    *,
    exception_id: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    evidence: Any,
    actor_role: Any,
    note: Any,
) -> None: ...


EXCEPTION_ATTACH_EVIDENCE = Query("exception_attach_evidence", _exception_attach_evidence)
"""db/queries/exceptions.sql:20

Adds references to the record; the state does not change.
Fence: needs_review or awaiting_approval, the reason allows attach_evidence, and the
caller's live lease (:lease_token) on the item, in :queue_scope.
"""


def _exception_submit_correction(
    *,
    exception_id: Any,
    reason_code: Any,
    evidence: Any,
    stale_steps: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    changes: Any,
    note: Any,
    actor_role: Any,
) -> None: ...


EXCEPTION_SUBMIT_CORRECTION = Query("exception_submit_correction", _exception_submit_correction)
"""db/queries/exceptions.sql:57

A correction for the exception's own reason, with evidence, becomes the record's next
version (numbered per source record) and goes to the workflow's approval queue.
Fence: needs_review, the reason allows submit_correction, :reason_code is the record's,
evidence given, stale steps among the completed ones, and the caller's live lease
(:lease_token) on the item, in :queue_scope.
"""


def _exception_approve_correction(
    *,
    exception_id: Any,
    version: Any,
    actor: Any,
    lease_token: Any,
    queue_scope: Any,
    actor_role: Any,
    note: Any,
) -> None: ...


EXCEPTION_APPROVE_CORRECTION = Query("exception_approve_correction", _exception_approve_correction)
"""db/queries/exceptions.sql:125

Four-eyes: the approver is not whoever submitted this version. The exception then waits
for a redrive; its item leaves every queue.
Fence: awaiting_approval at :version, the reason allows approve_correction, the version
corrected by someone else, and the caller's live lease (:lease_token), in :queue_scope.
"""


def _exception_reject_correction(
    *,
    exception_id: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    reason: Any,
    actor_role: Any,
) -> None: ...


EXCEPTION_REJECT_CORRECTION = Query("exception_reject_correction", _exception_reject_correction)
"""db/queries/exceptions.sql:174

Back to the owner's queue, with the reason for the rejection kept on the record.
Fence: awaiting_approval, the reason allows reject_correction, and the caller's live lease
(:lease_token) on the item, in :queue_scope.
"""


def _exception_close(
    *,
    exception_id: Any,
    closure: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    actor_role: Any,
    note: Any,
) -> None: ...


EXCEPTION_CLOSE = Query("exception_close", _exception_close)
"""db/queries/exceptions.sql:220

Closing without a correction: rejected, duplicate or obsolete.
Fence: needs_review, the reason allows close_exception, a known :closure, and the
caller's live lease (:lease_token) on the item, in :queue_scope.
"""


def _exception_request_redrive(
    *,
    exception_id: Any,
    version: Any,
    queue_scope: Any,
    actor: Any,
    actor_role: Any,
) -> None: ...


EXCEPTION_REQUEST_REDRIVE = Query("exception_request_redrive", _exception_request_redrive)
"""db/queries/exceptions.sql:265

Issues the redrive of the approved version, once: the key is unique, so a repeat (or a
concurrent request) inserts nothing and learns the key (`queued` false). No lease: no one
holds the exception once it is approved; the version is the fence. For a workflow that
Casework redrives itself (apply_decision), the failed decision goes back on the work list
(`nothing_to_reapply` if it is not failed: the caller answers the redrive at once).
Fence: redrive_pending at :version, the reason allows request_redrive, and the owner or
approval queue in :queue_scope.
"""


def _exception_report_redrive_result(
    *,
    redrive_key: Any,
    actor_role: Any,
    queue_scope: Any,
    succeeded: Any,
    detail: Any,
    actor: Any,
) -> None: ...


EXCEPTION_REPORT_REDRIVE_RESULT = Query(
    "exception_report_redrive_result", _exception_report_redrive_result
)
"""db/queries/exceptions.sql:332

The owning system's durable result for the redrive it was given. Success closes the
exception as corrected; failure returns it to its owner with one more attempt counted
and a fresh due time.
Fence: the redrive (:redrive_key) is unanswered and current, the exception is
redrive_pending, the catalogue allows it (Casework's own answers aside), the owner in
:queue_scope, and the answer comes from whom the workflow's route allows.
"""


def _exception_reopen(
    *,
    exception_id: Any,
    queue_scope: Any,
    actor: Any,
    actor_role: Any,
    reason: Any,
) -> None: ...


EXCEPTION_REOPEN = Query("exception_reopen", _exception_reopen)
"""db/queries/exceptions.sql:408

A closed exception goes back to its reason's owner with a fresh due time and a clean
slate for the next correction; the history stays and the reopen is counted.
Fence: closed (so of two reopens, one wins), the reason allows reopen_exception, and the
owner or approval queue in :queue_scope.
"""


def _exceptions_escalate_overdue(
    *,
    queue: Any,
) -> None: ...


EXCEPTIONS_ESCALATE_OVERDUE = Query("exceptions_escalate_overdue", _exceptions_escalate_overdue)
"""db/queries/exceptions.sql:455

Runs from the claim path (when item_claim_next finds nothing, or says overdue exceptions
are waiting), so no cron job is needed: an exception waiting for review past its due
time moves to its escalation owner's queue, once. One under a live
lease stays with its holder until the lease ends. SKIP LOCKED: a concurrent claim or
action on the same exception is never waited for; the next claim looks again.
"""
