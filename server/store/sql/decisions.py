"""The statements of db/queries/decisions.sql, as symbols.

Generated from db/queries/decisions.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/decisions.sql:1
DECISION_SUBMIT = Query("decision_submit", lambda *, verdict, actor, item_id, lease_token, evidence_hash, queue_scope, reason_code, note, auth_time, acr, actor_role, traceparent, authentication_id: None)
"""Records a verdict made under a lease, in one statement. Fence: every condition of it
sits in the WHERE clause of the UPDATE `moved`: a live lease of the caller with this token on a
pending item, the evidence the reviewer saw, and a reason code the queue's catalogue
allows for this verdict (with a note that says something, if the code requires one), in
a queue the caller's token covers, on an item that is not waiting for a second review
(that one is confirmed or overridden: decision_confirm, decision_override). If any
fails, nothing is written and no row comes back. The fence is the UPDATE's own
condition, not a SELECT ... FOR UPDATE before it: an UPDATE that meets a row another
transaction changed waits, and rechecks the whole condition on the row as it now is (as
FOR UPDATE did), without a separate row lock to write first.
The decision goes on the apply work list (decision_applications) in the same statement,
unless it needs a second review.
An escalation returns the item to `pending` in the escalation queue, priority boosted.
Second review (migration 0020): a verdict the queue's setting names, at or above its
minimum priority (casework_needs_second_review), is recorded as provisional and not
enlisted; the item returns to `pending` in the second-review queue, unleased, naming the
decider as the one person who may not claim it (`barred_claimer`) and the decision as
the one it waits on (`awaiting_decision_id`, whose id is taken from the sequence here so
that the item and the decision can name each other in one statement). The hint is
`second_review`, routed to both queues. A queue without second review pays one
comparison against its empty list.
The row keeps when its lease began, the item's lease count and when the item was
enqueued, for the queue's measures, and how the reviewer authenticated
(:authentication_id, migration 0023).
Step-up (migrations 0023, 0025): a queue with require_auth_within_seconds (or require_acr)
takes decisions only from a login at most that old (:auth_time; NULL, as for a CLI
token, never passes) with that acr; a queue without them pays two IS NULL tests.
QA sampling (migration 0021): an approve or reject in a queue with a qaSampleRate whose
draw (casework_qa_draw of the decision's id) falls below the rate is copied to the QA
queue (casework_qa_copy, called in the hint's arguments), and the hint names the QA queue
among its queues (`qs`) so its backlog subscribers re-read. The item's timeline reads
QA_SAMPLED from the copy: no timeline row is written here. The decision goes on the
apply work list all the same: QA never holds up the effect. In a queue without a rate
the step costs a comparison on the row `moved` returned: the copy's INSERT is the
function's (migration 0037), not a CTE set up on every decision.
"""

# db/queries/decisions.sql:127
DECISION_SUBMIT_DIAGNOSE = Query("decision_submit_diagnose", lambda *, note, auth_time, acr, reason_code, verdict, lease_token, item_id: None)
"""Read-only: why did decision_submit write nothing? Runs only on that failure path.
`prior_decision_id` is the verdict already recorded on this item under this very lease:
a console whose answer was lost retries with the same token, and is answered with it.
`note_missing`: the reason code requires a note and this one says nothing.
"""

# db/queries/decisions.sql:149
DECISION_OVERTURN = Query("decision_overturn", lambda *, decision_id, auth_time, acr, reason_code, note, actor, actor_role, traceparent, authentication_id: None)
"""Writes an overturn that supersedes :decision_id.
Fence: :decision_id is the effective decision of its item (not superseded already, not
an escalation, and not a provisional decision still waiting for its second review), and
the catalogue allows :reason_code for the reversed outcome (with
a note that says something, if the code requires one).
The UNIQUE constraint on `supersedes` settles two concurrent overturns of one decision.
"""

# db/queries/decisions.sql:194
DECISION_OVERTURN_DIAGNOSE = Query("decision_overturn_diagnose", lambda *, note, auth_time, acr, reason_code, decision_id: None)
"""Read-only: why did decision_overturn write nothing? Runs only on that failure path.
`superseded_by`: a concurrent overturn won; `awaits_review`: a provisional decision
nobody has confirmed (migration 0020); `reason_allowed`: the catalogue allows the
code for the reversed outcome; `note_missing`: it requires a note and this one says nothing.
"""

# db/queries/decisions.sql:216
DECISION_CONFIRM = Query("decision_confirm", lambda *, item_id, lease_token, actor, queue_scope, auth_time, acr, evidence_hash, actor_role, traceparent, authentication_id: None)
"""A second reviewer confirms the provisional decision an item waits on (migration 0020).
Fence: every condition sits in the WHERE clause of the UPDATE `moved`: a live lease of
the caller with this token on a pending review item, in a queue the caller's token
covers; the item waits on a decision (`awaiting_decision_id`) that the caller did not
make (four-eyes: the first decider is refused even holding a lease); and :evidence_hash
is both the item's evidence now and the evidence the decision was made on (pinned: if
the evidence changed since, the decision cannot be confirmed). If any fails, nothing is
written and no row comes back.
In the same statement: the item is decided and leaves no lease; the confirmation row
(append-only) records who, under which lease, on which evidence; the decision goes on
the apply work list, so the worker carries it out from now on; one hint, `decided`, in
the item's queue and the decision's (other_queues: decisionEvents of the decision's
queue delivers it now). The timeline reads the confirmation from its row.
"""

# db/queries/decisions.sql:297
DECISION_OVERRIDE = Query("decision_override", lambda *, item_id, lease_token, actor, queue_scope, auth_time, acr, evidence_hash, verdict, reason_code, note, actor_role, traceparent, authentication_id: None)
"""A second reviewer overrides the provisional decision an item waits on with a decision of
their own (migration 0020), which supersedes it: effective at once, while the provisional
one is never applied.
Fence: every condition sits in the WHERE clause of the UPDATE `moved`: a live lease of
the caller with this token on a pending review item, in a queue the caller's token
covers; the item waits on a decision the caller did not make (four-eyes); the evidence
the caller saw is the item's now; the verdict is approve or reject (an escalation is not
a decision on the subject); and the catalogue of the decision's own queue allows the
reason code for the verdict (with a note that says something, if the code requires
one). If any fails, nothing is written and no row comes back.
The override is recorded against the decision's queue (its catalogue, its effect, its
measures and its stream), with the second-review queue the lease was held in as
`review_queue`. One verdict per lease (review_decisions_one_per_lease) and one row
superseding a decision (review_decisions_one_overturn_each) hold here too.
"""

# db/queries/decisions.sql:382
SECOND_REVIEW_DIAGNOSE = Query("second_review_diagnose", lambda *, note, auth_time, acr, reason_code, verdict, lease_token, item_id: None)
"""Read-only: why did decision_confirm or decision_override write nothing? Runs only on that
failure path. `first_decider`, `decided_on`, `decided_in`: the provisional decision the
item waits on, if any. `confirmed_here` and `decided_here`: what was recorded on this
item under this very lease already (a confirmation, an override), so that a retry after
a lost answer is answered with it. :verdict and :reason_code are NULL for a confirmation.
"""
