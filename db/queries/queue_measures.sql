-- Queue.measures: each statement answers for every queue of :queues at once (the dashboard's
-- DataLoaders batch them), over the window "the last :since_seconds" on the database clock.
--
-- Every read of the history is a scan of the window through an index:
--   decisions   review_decisions_decided_brin (decided_at: the block ranges of the window)
--   arrivals    review_items_created_brin (created_at: likewise)
--   lapses and releases   item_events_queue_kind_at (queue, kind, at)
--   lapses no claim has noticed yet   review_items_lease_expiry (partial: leased items)
--   the backlog   review_items_claimable (partial: pending items)
-- tests/migrations/test_measure_plans.py proves it for each statement, in custom and generic
-- plans. An item's own row, and an overturn of a decision, are read per window row through
-- a scalar subquery (by primary key, by `supersedes`): as a join or an EXISTS, a generic
-- plan (which cannot know how small the window is) may hash the whole table instead.
--
-- The window's decisions are the first decisions (approve, reject, escalate) recorded in
-- it; overturns count only as `overturned`, on the decision they supersede. Review items
-- only: exception work is measured by Workflow.measures.
-- :reviewer NULL counts everyone's work; a name counts only that reviewer's decisions and
-- leases (what a reviewer's own token sees). Items waiting (arrivals, backlog, pending lease
-- counts) belong to nobody and are counted whole either way.

-- name: queue_measures_summary
-- One row per queue: the window's counts and distributions. Hands-on time runs from the
-- start of the lease a decision was made under to the decision; time to decision from the
-- item's enqueue (copied on the decision since 0015; read from the item for older rows).
-- `past_ttl` counts decisions whose hands-on time exceeded the queue's current lease TTL
-- (they finished only because the lease was renewed). Leases that ended in the window end
-- in a decision, a release or a lapse; a lapse is counted when the lease ran out, whether
-- or not a claim has noticed it yet.
-- `overturned` is counted from the overturns, not by probing each decision of the window
-- for one: an overturn comes after the decision it supersedes, so the overturns of the
-- window's decisions are among the overturns recorded since the window began (one in
-- forty decisions, say, instead of a probe for every one).
-- MATERIALIZED: an older decision's item is read once; inlined, the scalar subquery for its
-- enqueue time would run once for every aggregate that reads it.
WITH window_decisions AS MATERIALIZED (
    SELECT d.queue, d.verdict,
           extract(epoch FROM d.decided_at - d.lease_started_at)::double precision AS handling,
           extract(epoch FROM d.decided_at - coalesce(d.item_created_at,
                                                      (SELECT i.created_at
                                                       FROM review_items AS i
                                                       WHERE i.id = d.item_id)))::double precision
               AS elapsed,
           d.decided_at - d.lease_started_at > make_interval(secs => q.lease_ttl_seconds)
               AS past_ttl
    FROM review_decisions AS d
    JOIN queues AS q ON q.name = d.queue
    WHERE d.queue = ANY (:queues::text[])
      AND d.decided_at >= now() - make_interval(secs => :since_seconds)
      AND d.verdict <> 'overturn'
      AND (:reviewer::text IS NULL OR d.reviewer = :reviewer)
),
window_overturns AS (
    SELECT o.queue, count(*) AS overturned
    FROM review_decisions AS o
    CROSS JOIN LATERAL (SELECT s.decided_at, s.reviewer, s.verdict
                        FROM review_decisions AS s
                        WHERE s.id = o.supersedes) AS superseded
    WHERE o.queue = ANY (:queues::text[])
      AND o.decided_at >= now() - make_interval(secs => :since_seconds)
      AND o.verdict = 'overturn'
      AND superseded.decided_at >= now() - make_interval(secs => :since_seconds)
      AND superseded.verdict <> 'overturn'
      AND (:reviewer::text IS NULL OR superseded.reviewer = :reviewer)
    GROUP BY o.queue
),
decided AS (
    SELECT w.queue,
           count(*) AS decided,
           count(*) FILTER (WHERE w.verdict = 'escalate') AS escalated,
           count(*) FILTER (WHERE w.past_ttl) AS past_ttl,
           avg(w.handling) AS handling_mean,
           count(w.handling) AS handling_samples,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY w.handling) AS handling_p50,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY w.handling) AS handling_p90,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY w.handling) AS handling_p99,
           max(w.handling) AS handling_max,
           count(w.elapsed) AS time_to_decision_samples,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY w.elapsed) AS time_to_decision_p50,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY w.elapsed) AS time_to_decision_p90,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY w.elapsed) AS time_to_decision_p99,
           max(w.elapsed) AS time_to_decision_max
    FROM window_decisions AS w
    GROUP BY w.queue
),
endings AS (
    SELECT e.queue, e.kind, count(*) AS leases
    FROM item_events AS e
    WHERE e.queue = ANY (:queues::text[])
      AND e.kind IN ('lapsed', 'released')
      AND e.at >= now() - make_interval(secs => :since_seconds)
      AND (:reviewer::text IS NULL OR e.actor = :reviewer)
      AND (SELECT x.kind FROM review_items AS x WHERE x.id = e.item_id) = 'review'
    GROUP BY e.queue, e.kind
    UNION ALL
    SELECT i.queue, 'lapsed', count(*)
    FROM review_items AS i
    WHERE i.queue = ANY (:queues::text[])
      AND i.state = 'pending'
      AND i.lease_token IS NOT NULL
      AND i.lease_expires_at <= now()
      AND i.lease_expires_at >= now() - make_interval(secs => :since_seconds)
      AND i.kind = 'review'
      AND (:reviewer::text IS NULL OR i.lease_owner = :reviewer)
    GROUP BY i.queue
),
arrived AS (
    SELECT a.origin_queue AS queue, count(*) AS arrivals
    FROM review_items AS a
    WHERE a.origin_queue = ANY (:queues::text[])
      AND a.created_at >= now() - make_interval(secs => :since_seconds)
      AND a.kind = 'review'
    GROUP BY a.origin_queue
),
ended AS (
    SELECT n.queue,
           coalesce(sum(n.leases) FILTER (WHERE n.kind = 'lapsed'), 0)::bigint AS lapsed,
           coalesce(sum(n.leases) FILTER (WHERE n.kind = 'released'), 0)::bigint AS released
    FROM endings AS n
    GROUP BY n.queue
)
SELECT q.name AS queue,
       coalesce(r.arrivals, 0) AS arrivals,
       (SELECT count(*)
        FROM review_items AS b
        WHERE b.queue = q.name AND b.state = 'pending' AND b.kind = 'review') AS backlog,
       coalesce(d.decided, 0) AS decided,
       coalesce(d.escalated, 0) AS escalated,
       coalesce(o.overturned, 0) AS overturned,
       coalesce(d.past_ttl, 0) AS past_ttl,
       coalesce(e.lapsed, 0) AS lapsed,
       coalesce(e.released, 0) AS released,
       d.handling_mean, d.handling_samples, d.handling_p50, d.handling_p90, d.handling_p99,
       d.handling_max,
       d.time_to_decision_samples, d.time_to_decision_p50, d.time_to_decision_p90,
       d.time_to_decision_p99, d.time_to_decision_max
FROM unnest(:queues::text[]) AS q (name)
LEFT JOIN arrived AS r ON r.queue = q.name
LEFT JOIN decided AS d ON d.queue = q.name
LEFT JOIN window_overturns AS o ON o.queue = q.name
LEFT JOIN ended AS e ON e.queue = q.name;

-- name: queue_measures_lease_counts
-- The lease_count histograms: of the window's decisions (the item's count when it was
-- decided), and of the items pending now. Decisions recorded before lease counts were kept
-- (NULL) are left out.
-- Each half is a MATERIALIZED CTE: as a plain UNION ALL the planner may run the two halves
-- in parallel workers (a Parallel Append under a Gather Merge), whose start-up costs more
-- than the few thousand window rows they share out.
WITH at_decision AS MATERIALIZED (
    SELECT d.queue, true AS at_decision, d.lease_count, count(*) AS items
    FROM review_decisions AS d
    WHERE d.queue = ANY (:queues::text[])
      AND d.decided_at >= now() - make_interval(secs => :since_seconds)
      AND d.verdict <> 'overturn'
      AND d.lease_count IS NOT NULL
      AND (:reviewer::text IS NULL OR d.reviewer = :reviewer)
    GROUP BY d.queue, d.lease_count
),
pending AS MATERIALIZED (
    SELECT i.queue, false AS at_decision, i.lease_count, count(*) AS items
    FROM review_items AS i
    WHERE i.queue = ANY (:queues::text[]) AND i.state = 'pending' AND i.kind = 'review'
    GROUP BY i.queue, i.lease_count
)
SELECT a.queue, a.at_decision, a.lease_count, a.items FROM at_decision AS a
UNION ALL
SELECT p.queue, p.at_decision, p.lease_count, p.items FROM pending AS p
ORDER BY 1, 2, 3;

-- name: queue_measures_reasons
-- The reason mix of the window's decisions, largest first.
SELECT d.queue, d.reason_code, d.verdict, count(*) AS decisions
FROM review_decisions AS d
WHERE d.queue = ANY (:queues::text[])
  AND d.decided_at >= now() - make_interval(secs => :since_seconds)
  AND d.verdict <> 'overturn'
  AND (:reviewer::text IS NULL OR d.reviewer = :reviewer)
GROUP BY d.queue, d.reason_code, d.verdict
ORDER BY d.queue, decisions DESC, d.reason_code, d.verdict;

-- name: queue_measures_reviewers
-- One row per reviewer with a decision or a lapsed lease in the window: throughput beside
-- its quality (decisions later overturned) and the leases that ran out in their hands.
WITH decided AS (
    SELECT d.queue, d.reviewer,
           count(*) AS decided,
           count(d.lease_started_at) AS handling_samples,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY d.decided_at - d.lease_started_at)
               AS handling_p50_interval,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY d.decided_at - d.lease_started_at)
               AS handling_p90_interval,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY d.decided_at - d.lease_started_at)
               AS handling_p99_interval,
           max(d.decided_at - d.lease_started_at) AS handling_max_interval
    FROM review_decisions AS d
    WHERE d.queue = ANY (:queues::text[])
      AND d.decided_at >= now() - make_interval(secs => :since_seconds)
      AND d.verdict <> 'overturn'
      AND (:reviewer::text IS NULL OR d.reviewer = :reviewer)
    GROUP BY d.queue, d.reviewer
),
-- Counted from the overturns, as in queue_measures_summary.
overturned AS (
    SELECT o.queue, superseded.reviewer, count(*) AS overturned
    FROM review_decisions AS o
    CROSS JOIN LATERAL (SELECT s.decided_at, s.reviewer, s.verdict
                        FROM review_decisions AS s
                        WHERE s.id = o.supersedes) AS superseded
    WHERE o.queue = ANY (:queues::text[])
      AND o.decided_at >= now() - make_interval(secs => :since_seconds)
      AND o.verdict = 'overturn'
      AND superseded.decided_at >= now() - make_interval(secs => :since_seconds)
      AND superseded.verdict <> 'overturn'
      AND (:reviewer::text IS NULL OR superseded.reviewer = :reviewer)
    GROUP BY o.queue, superseded.reviewer
),
lapses AS (
    SELECT e.queue, e.actor AS reviewer, count(*) AS lapsed
    FROM item_events AS e
    WHERE e.queue = ANY (:queues::text[])
      AND e.kind = 'lapsed'
      AND e.at >= now() - make_interval(secs => :since_seconds)
      AND (:reviewer::text IS NULL OR e.actor = :reviewer)
      AND (SELECT x.kind FROM review_items AS x WHERE x.id = e.item_id) = 'review'
    GROUP BY e.queue, e.actor
    UNION ALL
    SELECT i.queue, i.lease_owner, count(*)
    FROM review_items AS i
    WHERE i.queue = ANY (:queues::text[])
      AND i.state = 'pending'
      AND i.lease_token IS NOT NULL
      AND i.lease_expires_at <= now()
      AND i.lease_expires_at >= now() - make_interval(secs => :since_seconds)
      AND i.kind = 'review'
      AND (:reviewer::text IS NULL OR i.lease_owner = :reviewer)
    GROUP BY i.queue, i.lease_owner
),
lapsed AS (
    SELECT l.queue, l.reviewer, sum(l.lapsed)::bigint AS lapsed
    FROM lapses AS l
    GROUP BY l.queue, l.reviewer
)
SELECT coalesce(d.queue, l.queue) AS queue,
       coalesce(d.reviewer, l.reviewer) AS reviewer,
       coalesce(d.decided, 0) AS decided,
       coalesce(o.overturned, 0) AS overturned,
       coalesce(l.lapsed, 0) AS lapsed,
       coalesce(d.handling_samples, 0) AS handling_samples,
       extract(epoch FROM d.handling_p50_interval)::double precision AS handling_p50,
       extract(epoch FROM d.handling_p90_interval)::double precision AS handling_p90,
       extract(epoch FROM d.handling_p99_interval)::double precision AS handling_p99,
       extract(epoch FROM d.handling_max_interval)::double precision AS handling_max
FROM decided AS d
-- A reviewer's overturned decisions are among its window decisions, so never without a row.
LEFT JOIN overturned AS o ON o.queue = d.queue AND o.reviewer = d.reviewer
FULL JOIN lapsed AS l ON l.queue = d.queue AND l.reviewer = d.reviewer
ORDER BY 1, 3 DESC, 2;

-- name: queue_measures_quality
-- QA and overturns (Queue.measures.quality) of the window's approve and reject decisions
-- (first decisions; escalations have no outcome to check or overturn), for each queue and
-- broken down by reason code and by reviewer, in one statement (GROUPING SETS; `dimension`
-- says which row is which). A decision is `sampled` when it has a QA copy, `checked` when
-- a QA result was recorded, `agreed` when that result agrees, `overturned` when an overturn
-- supersedes it. Each is read per window decision through a scalar subquery on a unique
-- index (review_items_one_qa_copy_each, qa_results_one_per_decision,
-- review_decisions_one_overturn_each): three probes a decision, in custom and generic plans
-- alike. As joins, or as EXISTS (which a generic plan may turn into a hash of the whole
-- table), the planner may read every QA copy or overturn ever made when it cannot tell how
-- small the window is; a scalar subquery it can only run per row.
WITH window_decisions AS MATERIALIZED (
    SELECT d.queue, d.reason_code, d.reviewer,
           (SELECT true FROM review_items AS c WHERE c.qa_of = d.id) IS NOT NULL AS sampled,
           (SELECT r.agrees FROM qa_results AS r WHERE r.decision_id = d.id) AS agrees,
           (SELECT true FROM review_decisions AS o WHERE o.supersedes = d.id) IS NOT NULL
               AS overturned
    FROM review_decisions AS d
    WHERE d.queue = ANY (:queues::text[])
      AND d.decided_at >= now() - make_interval(secs => :since_seconds)
      AND d.verdict IN ('approve', 'reject')
      AND (:reviewer::text IS NULL OR d.reviewer = :reviewer)
)
SELECT w.queue,
       CASE WHEN GROUPING(w.reason_code) = 0 THEN 'reason_code'
            WHEN GROUPING(w.reviewer) = 0 THEN 'reviewer'
            ELSE 'queue' END AS dimension,
       coalesce(w.reason_code, w.reviewer) AS key,
       count(*) AS decided,
       count(*) FILTER (WHERE w.sampled) AS sampled,
       count(w.agrees) AS checked,
       count(*) FILTER (WHERE w.agrees) AS agreed,
       count(*) FILTER (WHERE w.overturned) AS overturned
FROM window_decisions AS w
GROUP BY GROUPING SETS ((w.queue), (w.queue, w.reason_code), (w.queue, w.reviewer))
ORDER BY 1, 2, 4 DESC, 3;
