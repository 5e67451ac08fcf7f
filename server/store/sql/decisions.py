"""The statements of db/queries/decisions.sql, as symbols.

Generated from db/queries/decisions.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _decision_submit(
    *,
    verdict: Any,
    item_id: Any,
    lease_token: Any,
    actor: Any,
    evidence_hash: Any,
    queue_scope: Any,
    reason_code: Any,
    note: Any,
    actor_role: Any,
    traceparent: Any,
) -> None: ...


DECISION_SUBMIT = Query("decision_submit", _decision_submit)
"""db/queries/decisions.sql:1

Records a verdict made under a lease, in one statement. Fence: every condition of it
sits in the WHERE clause of the UPDATE `moved`: a live lease of the caller with this token on a
pending item, the evidence the reviewer saw, and a reason code the queue's catalogue
allows for this verdict (with a note that says something, if the code requires one), in
a queue the caller's token covers. If any fails, nothing is written and no row comes
back. The fence is the UPDATE's own condition, not a SELECT ... FOR UPDATE before it: an
UPDATE that meets a row another transaction changed waits, and rechecks the whole
condition on the row as it now is (as FOR UPDATE did), without a separate row lock to
write first.
The decision goes on the apply work list (decision_applications) in the same statement.
An escalation returns the item to `pending` in the escalation queue, priority boosted.
The row keeps when its lease began, the item's lease count and when the item was
enqueued, for the queue's measures.
QA sampling (migration 0021): an approve or reject in a queue with a qaSampleRate whose
draw (casework_qa_draw of the decision's id) falls below the rate is copied to the QA
queue (`qa_sampled`), and the hint names the QA queue among its queues (`qs`) so its
backlog subscribers re-read. The item's timeline reads QA_SAMPLED from the copy: no
timeline row is written here. The decision goes on the apply work list all the same: QA
never holds up the effect. In a queue without a rate the step costs a comparison on the
row `moved` returned.
"""


def _decision_submit_diagnose(
    *,
    note: Any,
    reason_code: Any,
    verdict: Any,
    lease_token: Any,
    item_id: Any,
) -> None: ...


DECISION_SUBMIT_DIAGNOSE = Query("decision_submit_diagnose", _decision_submit_diagnose)
"""db/queries/decisions.sql:100

Read-only: why did decision_submit write nothing? Runs only on that failure path.
`prior_decision_id` is the verdict already recorded on this item under this very lease:
a console whose answer was lost retries with the same token, and is answered with it.
`note_missing`: the reason code requires a note and this one says nothing.
"""


def _decision_overturn(
    *,
    decision_id: Any,
    reason_code: Any,
    note: Any,
    actor: Any,
    actor_role: Any,
    traceparent: Any,
) -> None: ...


DECISION_OVERTURN = Query("decision_overturn", _decision_overturn)
"""db/queries/decisions.sql:117

Writes an overturn that supersedes :decision_id.
Fence: :decision_id is the effective decision of its item (not superseded already, and
not an escalation), and the catalogue allows :reason_code for the reversed outcome (with
a note that says something, if the code requires one).
The UNIQUE constraint on `supersedes` settles two concurrent overturns of one decision.
"""


def _decision_overturn_diagnose(
    *,
    note: Any,
    reason_code: Any,
    decision_id: Any,
) -> None: ...


DECISION_OVERTURN_DIAGNOSE = Query("decision_overturn_diagnose", _decision_overturn_diagnose)
"""db/queries/decisions.sql:156

Read-only: why did decision_overturn write nothing? Runs only on that failure path.
`superseded_by`: a concurrent overturn won; `reason_allowed`: the catalogue allows the
code for the reversed outcome; `note_missing`: it requires a note and this one says nothing.
"""
