-- Workflow measures (Workflow.measures), each statement for many workflows at once, so a
-- dashboard over any number of workflows costs the same round trips. Counts of things that
-- happen read the events of the window (:since_seconds) through exception_events_workflow_at;
-- counts of things that are read the open exceptions through the partial index
-- exceptions_open_once. Neither reads the closed history.

-- name: workflow_measures_get_now
-- Per workflow, now: open exceptions; those waiting for a person (for review or for an
-- approver) with nobody holding them under a live lease, not yet due apart from overdue;
-- and the work waiting for operators (needs_review) and for approvers (awaiting_approval).
-- The lease is read per open exception (a subquery, not a join), so the item history is
-- never scanned, however the planner estimates the open ones.
WITH open AS (
    SELECT e.workflow, e.state, e.due_at <= now() AS overdue,
           coalesce((SELECT i.lease_expires_at > now()
                     FROM review_items AS i WHERE i.id = e.item_id), false) AS held
    FROM exceptions AS e
    WHERE e.workflow = ANY (:workflows::text[])
      AND e.state <> 'closed'
)
SELECT o.workflow,
       count(*) AS open,
       count(*) FILTER (WHERE o.state IN ('needs_review', 'awaiting_approval')
                          AND NOT o.held AND NOT o.overdue) AS unclaimed_new,
       count(*) FILTER (WHERE o.state IN ('needs_review', 'awaiting_approval')
                          AND NOT o.held AND o.overdue) AS unclaimed_overdue,
       count(*) FILTER (WHERE o.state = 'needs_review') AS needs_review,
       count(*) FILTER (WHERE o.state = 'awaiting_approval') AS awaiting_approval
FROM open AS o
GROUP BY o.workflow;

-- name: workflow_measures_get_ages
-- Per workflow, reason and consequence, now: the open exceptions and their ages, oldest
-- first. An exception's age runs from when it last opened: its raise, or its last reopen.
SELECT e.workflow, e.reason_code, e.consequence,
       count(*) AS open,
       max(a.age_seconds) AS oldest_age_seconds,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY a.age_seconds) AS p50_age_seconds
FROM exceptions AS e
CROSS JOIN LATERAL (
    SELECT extract(epoch FROM now() - CASE
               WHEN e.reopen_count = 0 THEN e.created_at
               ELSE coalesce((SELECT max(v.at) FROM exception_events AS v
                              WHERE v.exception_id = e.id AND v.kind = 'reopened'),
                             e.created_at)
           END)::double precision AS age_seconds
) AS a
WHERE e.workflow = ANY (:workflows::text[])
  AND e.state <> 'closed'
GROUP BY e.workflow, e.reason_code, e.consequence
ORDER BY e.workflow, oldest_age_seconds DESC, e.reason_code, e.consequence;

-- name: workflow_measures_get_activity
-- Per workflow, the events of the last :since_seconds: raises, redrive requests and
-- results, closures by kind, reopens; the operators' hands-on time (the start of the lease
-- under which a correction was submitted or the exception closed, to that action), the
-- approvers' hands-on time (likewise, to an approval or a rejection), and the approval
-- time (the approved version's submission to its approval: elapsed, not labour).
WITH windowed AS (
    SELECT v.workflow, v.kind, v.data ->> 'closure' AS closure,
           extract(epoch FROM v.at - v.lease_started_at)::double precision AS hands_on,
           extract(epoch FROM v.at - c.submitted_at)::double precision AS approval
    FROM exception_events AS v
    LEFT JOIN exception_corrections AS c
        ON v.kind = 'correction_approved'
       AND c.exception_id = v.exception_id AND c.version = v.version
    WHERE v.workflow = ANY (:workflows::text[])
      AND v.at >= now() - make_interval(secs => :since_seconds::integer)
),
labelled AS (
    SELECT w.*,
           CASE WHEN w.kind IN ('correction_submitted', 'closed') THEN w.hands_on END
               AS operator_seconds,
           CASE WHEN w.kind IN ('correction_approved', 'correction_rejected') THEN w.hands_on END
               AS approver_seconds
    FROM windowed AS w
)
SELECT l.workflow,
       count(*) FILTER (WHERE l.kind = 'raised') AS raised,
       count(*) FILTER (WHERE l.kind = 'recurred') AS recurred,
       count(*) FILTER (WHERE l.kind = 'reopened') AS reopened,
       count(*) FILTER (WHERE l.kind = 'correction_submitted') AS corrections_submitted,
       count(*) FILTER (WHERE l.kind = 'correction_rejected') AS corrections_rejected,
       count(*) FILTER (WHERE l.kind = 'redrive_requested') AS redrives_requested,
       count(*) FILTER (WHERE l.kind = 'redrive_succeeded') AS redrives_succeeded,
       count(*) FILTER (WHERE l.kind = 'redrive_failed') AS redrives_failed,
       count(*) FILTER (WHERE l.kind = 'closed' AND l.closure = 'rejected') AS closed_rejected,
       count(*) FILTER (WHERE l.kind = 'closed' AND l.closure = 'duplicate') AS closed_duplicate,
       count(*) FILTER (WHERE l.kind = 'closed' AND l.closure = 'obsolete') AS closed_obsolete,
       count(l.operator_seconds) AS handling_samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.operator_seconds) AS handling_p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY l.operator_seconds) AS handling_p90,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY l.operator_seconds) AS handling_p99,
       max(l.operator_seconds) AS handling_max,
       avg(l.operator_seconds) AS handling_mean,
       count(l.approver_seconds) AS approver_handling_samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.approver_seconds) AS approver_handling_p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY l.approver_seconds) AS approver_handling_p90,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY l.approver_seconds) AS approver_handling_p99,
       max(l.approver_seconds) AS approver_handling_max,
       avg(l.approver_seconds) AS approver_handling_mean,
       count(l.approval) AS approval_samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.approval) AS approval_p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY l.approval) AS approval_p90,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY l.approval) AS approval_p99,
       max(l.approval) AS approval_max
FROM labelled AS l
GROUP BY l.workflow;

-- name: workflow_measures_get_repeats
-- Per workflow and reason, the raises of the last :since_seconds: exceptions raised, raises
-- of one already open (recurrences), and the source records raised more than once in the
-- window (a recurrence, or a new exception after the last one closed). Most repeated first.
WITH raises AS (
    SELECT v.workflow, v.exception_id, v.kind
    FROM exception_events AS v
    WHERE v.workflow = ANY (:workflows::text[])
      AND v.at >= now() - make_interval(secs => :since_seconds::integer)
      AND v.kind IN ('raised', 'recurred')
),
-- The window's exceptions by id, as an array: the planner cannot know how few they are,
-- and would otherwise join them to a scan of every exception ever raised.
raised_exceptions AS (
    SELECT e.id, e.reason_code, e.source_record_id
    FROM exceptions AS e
    WHERE e.id = ANY (ARRAY(SELECT DISTINCT r.exception_id FROM raises AS r))
),
by_source AS (
    SELECT r.workflow, x.reason_code, x.source_record_id,
           count(*) FILTER (WHERE r.kind = 'raised') AS raised,
           count(*) FILTER (WHERE r.kind = 'recurred') AS recurrences
    FROM raises AS r
    JOIN raised_exceptions AS x ON x.id = r.exception_id
    GROUP BY r.workflow, x.reason_code, x.source_record_id
)
SELECT s.workflow, s.reason_code,
       sum(s.raised)::integer AS raised,
       sum(s.recurrences)::integer AS recurrences,
       count(*) FILTER (WHERE s.raised + s.recurrences > 1) AS sources_with_repeats
FROM by_source AS s
GROUP BY s.workflow, s.reason_code
ORDER BY s.workflow, recurrences DESC, raised DESC, s.reason_code;
