-- name: metrics_figures_read
-- The database figures of /metrics, as one JSON object. A snapshot younger than
-- :max_age_seconds is returned as it is; otherwise this statement computes the figures and
-- stores them for the next scrapes, of this process or any other. Computing costs what the
-- backlog costs, never the history: every count walks a partial index (pending items,
-- applications not applied, open exceptions). Every configured queue, workflow and reason
-- is listed, with zeros, so that a series does not vanish when its count drops to nothing.
WITH cached AS (
    SELECT f.figures
    FROM metrics_figures AS f
    WHERE f.id = 1
      AND f.computed_at > now() - make_interval(secs => :max_age_seconds)
),
items AS (
    SELECT i.queue,
           count(*) FILTER (WHERE i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
               AS pending,
           count(*) FILTER (WHERE i.lease_expires_at > now()) AS leased,
           extract(epoch FROM now() - min(i.created_at)
                   FILTER (WHERE i.lease_expires_at IS NULL OR i.lease_expires_at <= now()))
               AS oldest_pending_age_seconds
    FROM review_items AS i
    WHERE i.state = 'pending'
    GROUP BY i.queue
),
applications AS (
    SELECT a.queue,
           count(*) FILTER (WHERE a.state = 'pending') AS unapplied,
           count(*) FILTER (WHERE a.state = 'pending'
                              AND a.decided_at <= now() - make_interval(
                                  secs => :unapplied_threshold_seconds))
               AS unapplied_older_than_threshold,
           count(*) FILTER (WHERE a.state = 'failed') AS failed
    FROM decision_applications AS a
    WHERE a.state <> 'applied'
    GROUP BY a.queue
),
open_exceptions AS (
    SELECT e.workflow, e.reason_code,
           count(*) AS open,
           count(*) FILTER (WHERE e.state = 'needs_review' AND e.due_at <= now()) AS overdue
    FROM exceptions AS e
    WHERE e.state <> 'closed'
    GROUP BY e.workflow, e.reason_code
),
computed AS (
    INSERT INTO metrics_figures AS f (id, computed_at, figures)
    SELECT 1, now(), jsonb_build_object(
        'queues', (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'queue', q.name,
                       'pending', coalesce(i.pending, 0),
                       'leased', coalesce(i.leased, 0),
                       'oldest_pending_age_seconds', coalesce(i.oldest_pending_age_seconds, 0),
                       'unapplied', coalesce(a.unapplied, 0),
                       'unapplied_older_than_threshold',
                           coalesce(a.unapplied_older_than_threshold, 0),
                       'failed', coalesce(a.failed, 0)) ORDER BY q.name), '[]'::jsonb)
            FROM queues AS q
            LEFT JOIN items AS i ON i.queue = q.name
            LEFT JOIN applications AS a ON a.queue = q.name),
        'reasons', (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'workflow', r.workflow,
                       'reason', r.code,
                       'open', coalesce(o.open, 0)) ORDER BY r.workflow, r.code), '[]'::jsonb)
            FROM exception_reasons AS r
            LEFT JOIN open_exceptions AS o
                   ON o.workflow = r.workflow AND o.reason_code = r.code),
        'workflows', (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'workflow', w.name,
                       'overdue', coalesce((SELECT sum(o.overdue) FROM open_exceptions AS o
                                            WHERE o.workflow = w.name), 0))
                       ORDER BY w.name), '[]'::jsonb)
            FROM workflows AS w))
    -- A one-time filter: with a fresh snapshot, none of the counting above runs.
    WHERE NOT EXISTS (SELECT 1 FROM cached)
    ON CONFLICT (id) DO UPDATE
        SET computed_at = excluded.computed_at, figures = excluded.figures
    RETURNING f.figures
)
SELECT figures FROM cached
UNION ALL
SELECT figures FROM computed;
