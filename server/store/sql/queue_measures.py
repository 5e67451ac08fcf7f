"""The statements of db/queries/queue_measures.sql, as symbols.

Generated from db/queries/queue_measures.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/queue_measures.sql:22
QUEUE_MEASURES_SUMMARY = Query("queue_measures_summary", lambda *, queues, since_seconds, reviewer: None)
"""One row per queue: the window's counts and distributions. Hands-on time runs from the
start of the lease a decision was made under to the decision; time to decision from the
item's enqueue (copied on the decision since 0015; read from the item for older rows).
`past_ttl` counts decisions whose hands-on time exceeded the queue's current lease TTL
(they finished only because the lease was renewed). Leases that ended in the window end
in a decision, a release or a lapse; a lapse is counted when the lease ran out, whether
or not a claim has noticed it yet.
`overturned` is counted from the overturns, not by probing each decision of the window
for one: an overturn comes after the decision it supersedes, so the overturns of the
window's decisions are among the overturns recorded since the window began (one in
forty decisions, say, instead of a probe for every one).
MATERIALIZED: an older decision's item is read once; inlined, the scalar subquery for its
enqueue time would run once for every aggregate that reads it.
"""

# db/queries/queue_measures.sql:143
QUEUE_MEASURES_LEASE_COUNTS = Query("queue_measures_lease_counts", lambda *, queues, since_seconds, reviewer: None)
"""The lease_count histograms: of the window's decisions (the item's count when it was
decided), and of the items pending now. Decisions recorded before lease counts were kept
(NULL) are left out.
Each half is a MATERIALIZED CTE: as a plain UNION ALL the planner may run the two halves
in parallel workers (a Parallel Append under a Gather Merge), whose start-up costs more
than the few thousand window rows they share out.
"""

# db/queries/queue_measures.sql:171
QUEUE_MEASURES_REASONS = Query("queue_measures_reasons", lambda *, queues, since_seconds, reviewer: None)
"""The reason mix of the window's decisions, largest first."""

# db/queries/queue_measures.sql:182
QUEUE_MEASURES_REVIEWERS = Query("queue_measures_reviewers", lambda *, queues, since_seconds, reviewer: None)
"""One row per reviewer with a decision or a lapsed lease in the window: throughput beside
its quality (decisions later overturned) and the leases that ran out in their hands.
"""

# db/queries/queue_measures.sql:260
QUEUE_MEASURES_QUALITY = Query("queue_measures_quality", lambda *, queues, since_seconds, reviewer: None)
"""QA and overturns (Queue.measures.quality) of the window's approve and reject decisions
(first decisions; escalations have no outcome to check or overturn), for each queue and
broken down by reason code and by reviewer, in one statement (GROUPING SETS; `dimension`
says which row is which). A decision is `sampled` when it has a QA copy, `checked` when
a QA result was recorded, `agreed` when that result agrees, `overturned` when an overturn
supersedes it. Each is read per window decision through a scalar subquery on a unique
index (review_items_one_qa_copy_each, qa_results_one_per_decision,
review_decisions_one_overturn_each): three probes a decision, in custom and generic plans
alike. As joins, or as EXISTS (which a generic plan may turn into a hash of the whole
table), the planner may read every QA copy or overturn ever made when it cannot tell how
small the window is; a scalar subquery it can only run per row.
"""
