"""The statements of db/queries/exceptions.sql, as symbols.

Generated from db/queries/exceptions.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/exceptions.sql:10
EXCEPTION_RAISE = Query("exception_raise", lambda *, workflow, source_record_id, reason_code, detail, blocked_step, completed_steps, evidence, context, consequence, actor, actor_role, decision_id: None)
""":decision_id is for the apply_decision workflow only (NULL otherwise)."""

# db/queries/exceptions.sql:20
EXCEPTION_ATTACH_EVIDENCE = Query("exception_attach_evidence", lambda *, exception_id, lease_token, actor, queue_scope, evidence, authentication_id, actor_role, note: None)
"""Adds references to the record; the state does not change.
Fence: needs_review or awaiting_approval, the reason allows attach_evidence, and the
caller's live lease (:lease_token) on the item, in :queue_scope.
"""

# db/queries/exceptions.sql:58
EXCEPTION_SUBMIT_CORRECTION = Query("exception_submit_correction", lambda *, exception_id, reason_code, evidence, stale_steps, lease_token, actor, queue_scope, changes, note, authentication_id, actor_role: None)
"""A correction for the exception's own reason, with evidence, becomes the record's next
version (numbered per source record) and goes to the workflow's approval queue.
Fence: needs_review, the reason allows submit_correction, :reason_code is the record's,
evidence given, stale steps among the completed ones, and the caller's live lease
(:lease_token) on the item, in :queue_scope.
"""

# db/queries/exceptions.sql:127
EXCEPTION_APPROVE_CORRECTION = Query("exception_approve_correction", lambda *, exception_id, auth_time, acr, version, actor, lease_token, queue_scope, authentication_id, actor_role, note: None)
"""Four-eyes: the approver is not whoever submitted this version. The exception then waits
for a redrive; its item leaves every queue.
Fence: awaiting_approval at :version, the reason allows approve_correction, the version
corrected by someone else, and the caller's live lease (:lease_token), in :queue_scope;
a sign-in as recent (:auth_time) and of the acr (:acr) the workflow's step-up setting
asks for, if it has one (migration 0023; a workflow without it pays two IS NULL tests).
"""

# db/queries/exceptions.sql:182
EXCEPTION_APPROVAL_STEP_UP_DIAGNOSE = Query("exception_approval_step_up_diagnose", lambda *, auth_time, acr, exception_id: None)
"""Read-only: did exception_approve_correction write nothing because the workflow's step-up
setting refused the caller's sign-in? Runs only on that failure path.
"""

# db/queries/exceptions.sql:193
EXCEPTION_REJECT_CORRECTION = Query("exception_reject_correction", lambda *, exception_id, lease_token, actor, queue_scope, reason, authentication_id, actor_role: None)
"""Back to the owner's queue, with the reason for the rejection kept on the record.
Fence: awaiting_approval, the reason allows reject_correction, and the caller's live lease
(:lease_token) on the item, in :queue_scope.
"""

# db/queries/exceptions.sql:240
EXCEPTION_CLOSE = Query("exception_close", lambda *, exception_id, closure, lease_token, actor, queue_scope, authentication_id, actor_role, note: None)
"""Closing without a correction: rejected, duplicate or obsolete.
Fence: needs_review, the reason allows close_exception, a known :closure, and the
caller's live lease (:lease_token) on the item, in :queue_scope.
"""

# db/queries/exceptions.sql:286
EXCEPTION_REQUEST_REDRIVE = Query("exception_request_redrive", lambda *, exception_id, version, queue_scope, actor, actor_role: None)
"""Issues the redrive of the approved version, once: the key is unique, so a repeat (or a
concurrent request) inserts nothing and learns the key (`queued` false). No lease: no one
holds the exception once it is approved; the version is the fence. For a workflow that
Casework redrives itself (apply_decision), the failed decision goes back on the work list
(`nothing_to_reapply` if it is not failed: the caller answers the redrive at once).
Fence: redrive_pending at :version, the reason allows request_redrive, and the owner or
approval queue in :queue_scope.
"""

# db/queries/exceptions.sql:355
EXCEPTION_REPORT_REDRIVE_RESULT = Query("exception_report_redrive_result", lambda *, redrive_key, actor_role, queue_scope, succeeded, detail, actor: None)
"""The owning system's durable result for the redrive it was given. Success closes the
exception as corrected; failure returns it to its owner with one more attempt counted
and a fresh due time.
Fence: the redrive (:redrive_key) is unanswered and current, the exception is
redrive_pending, the catalogue allows it (Casework's own answers aside), the owner in
:queue_scope, and the answer comes from whom the workflow's route allows.
"""

# db/queries/exceptions.sql:432
EXCEPTION_REOPEN = Query("exception_reopen", lambda *, exception_id, queue_scope, actor, actor_role, reason: None)
"""A closed exception goes back to its reason's owner with a fresh due time and a clean
slate for the next correction; the history stays and the reopen is counted.
Fence: closed (so of two reopens, one wins), the reason allows reopen_exception, and the
owner or approval queue in :queue_scope.
"""

# db/queries/exceptions.sql:479
EXCEPTIONS_ESCALATE_OVERDUE = Query("exceptions_escalate_overdue", lambda *, queue: None)
"""Runs from the claim path (when item_claim_next finds nothing, or says overdue exceptions
are waiting), so no cron job is needed: an exception waiting for review past its due
time moves to its escalation owner's queue, once. One under a live
lease stays with its holder until the lease ends. SKIP LOCKED: a concurrent claim or
action on the same exception is never waited for; the next claim looks again.
"""
