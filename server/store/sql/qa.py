"""The statements of db/queries/qa.sql, as symbols.

Generated from db/queries/qa.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/qa.sql:4
QA_RESULT_RECORD = Query("qa_result_record", lambda *, item_id, lease_token, actor, queue_scope, reason_code, agrees, note, actor_role, traceparent, authentication_id: None)
"""Records a QA reviewer's agree or disagree on a sampled decision, in one statement: the
append-only qa_results row, the QA copy decided (lease cleared), a `qa_checked` row on the
timeline of the item whose decision was checked (the note as its body), and a `decided`
hint for the copy in the QA queue, naming the decision's queue among its queues.
Nothing goes on the apply work list: a check has no effect to carry out.
Fence: every condition sits in the WHERE clause of the UPDATE `checked`: a live lease of
the caller with this token on a pending QA copy, in a queue the caller's token covers; the
caller is not the reviewer of the decision checked; a reason code of the QA queue's
catalogue allowed for the answer (verdict approve: may be given when agreeing; reject:
when disagreeing), with a note that says something if the code requires one. If any
fails, nothing is written and no row comes back.
"""

# db/queries/qa.sql:64
QA_RESULT_RECORD_DIAGNOSE = Query("qa_result_record_diagnose", lambda *, note, lease_token, reason_code, agrees, item_id: None)
"""Read-only: why did qa_result_record write nothing? Runs only on that failure path.
`decider`: the reviewer of the decision the copy checks (NULL: not a QA copy);
`reason_allowed`: the QA queue's catalogue allows the code for this answer;
`note_missing`: the code requires a note and this one says nothing.
The result already recorded on this copy under this very lease, if any (decision_id,
agrees, reason_code, note, reviewer, ...): a console whose answer was lost retries with
the same token, and is answered with it.
"""

# db/queries/qa.sql:86
QA_GET_BY_DECISION_IDS = Query("qa_get_by_decision_ids", lambda *, decision_ids: None)
"""For each sampled decision among :decision_ids: its QA copy, and the result if one was
recorded. A decision without a row here was not sampled. Reads review_items by
review_items_one_qa_copy_each and qa_results by its decision.
"""
