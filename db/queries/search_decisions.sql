-- The decision search (server/domain/search/decisions.py), one statement per index that
-- can drive it. Each walks, for every queue of :queues (the caller's scope, narrowed by the
-- `queues` filter), that queue's entries of its index in (decided_at, id) order from the
-- keyset position (:at, :after_id), within [:decided_after, :decided_before), reading at
-- most :scan_cap entries; the filters the index does not hold are checked on the rows it
-- reads (`matched`). A queue's walk yields its first :page_size matches, and also its
-- :scan_cap-th row (`walked` = :scan_cap) when it gets that far: that row is where the walk
-- stopped, so the caller knows how far each queue's answer is complete.
--
-- Both orders are in each statement, the one not asked for behind a one-time filter on
-- :newest_first, so a generic plan holds both walks and runs one. No cursor: (:at,
-- :after_id) lies beyond every row in the order asked for.
--
-- Status is read from the rows that supersede and confirm a decision, as every read of
-- decisions does (decisions_read.sql): SUPERSEDED when a row names it in `supersedes`,
-- PROVISIONAL when it was recorded as needing a second review that has not confirmed it,
-- EFFECTIVE otherwise.

-- name: decisions_search_by_queue
-- Served by review_decisions_search_queue (queue, decided_at, id).
-- The walk when no reviewer, reason code, verdict or status narrows it.
-- The time range and the keyset are conditions of the index (its decided_at, id
-- columns); the queue is its first column.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter to
        -- check, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL AND :status::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                          AND (:status::text IS NULL OR :status = CASE
                               WHEN EXISTS (SELECT 1 FROM review_decisions AS s
                                            WHERE s.supersedes = d.id) THEN 'superseded'
                               WHEN d.provisional AND NOT EXISTS (
                                    SELECT 1 FROM decision_confirmations AS c
                                    WHERE c.decision_id = d.id) THEN 'provisional'
                               ELSE 'effective' END)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE :newest_first AND d.queue = q.name
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) < (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at DESC, d.id DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE NOT :newest_first AND d.queue = q.name
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) > (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at, d.id
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;

-- name: decisions_search_by_reviewer
-- Served by review_decisions_search_reviewer (queue, reviewer, decided_at, id).
-- The walk when the search names a reviewer.
-- The time range and the keyset are conditions of the index (its decided_at, id
-- columns); the queue is its first column.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter to
        -- check, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL AND :status::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                          AND (:status::text IS NULL OR :status = CASE
                               WHEN EXISTS (SELECT 1 FROM review_decisions AS s
                                            WHERE s.supersedes = d.id) THEN 'superseded'
                               WHEN d.provisional AND NOT EXISTS (
                                    SELECT 1 FROM decision_confirmations AS c
                                    WHERE c.decision_id = d.id) THEN 'provisional'
                               ELSE 'effective' END)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE :newest_first AND d.queue = q.name
               AND d.reviewer = :reviewer
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) < (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at DESC, d.id DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE NOT :newest_first AND d.queue = q.name
               AND d.reviewer = :reviewer
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) > (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at, d.id
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;

-- name: decisions_search_by_reason
-- Served by review_decisions_search_reason (queue, reason_code, decided_at, id).
-- The walk when the search names a reason code (and no reviewer).
-- The time range and the keyset are conditions of the index (its decided_at, id
-- columns); the queue is its first column.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter to
        -- check, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL AND :status::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                          AND (:status::text IS NULL OR :status = CASE
                               WHEN EXISTS (SELECT 1 FROM review_decisions AS s
                                            WHERE s.supersedes = d.id) THEN 'superseded'
                               WHEN d.provisional AND NOT EXISTS (
                                    SELECT 1 FROM decision_confirmations AS c
                                    WHERE c.decision_id = d.id) THEN 'provisional'
                               ELSE 'effective' END)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE :newest_first AND d.queue = q.name
               AND d.reason_code = :reason_code
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) < (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at DESC, d.id DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE NOT :newest_first AND d.queue = q.name
               AND d.reason_code = :reason_code
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) > (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at, d.id
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;

-- name: decisions_search_by_verdict
-- Served by review_decisions_search_verdict (queue, outcome, decided_at, id).
-- The walk when the search names a verdict (and no reviewer or reason code).
-- The time range and the keyset are conditions of the index (its decided_at, id
-- columns); the queue is its first column.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter to
        -- check, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL AND :status::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                          AND (:status::text IS NULL OR :status = CASE
                               WHEN EXISTS (SELECT 1 FROM review_decisions AS s
                                            WHERE s.supersedes = d.id) THEN 'superseded'
                               WHEN d.provisional AND NOT EXISTS (
                                    SELECT 1 FROM decision_confirmations AS c
                                    WHERE c.decision_id = d.id) THEN 'provisional'
                               ELSE 'effective' END)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE :newest_first AND d.queue = q.name
               AND d.outcome = :verdict
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) < (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at DESC, d.id DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE NOT :newest_first AND d.queue = q.name
               AND d.outcome = :verdict
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) > (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at, d.id
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;

-- name: decisions_search_provisional
-- Served by review_decisions_search_provisional (queue, decided_at, id) WHERE provisional.
-- The walk when the search asks for PROVISIONAL decisions (and no reviewer or reason
-- code): only rows recorded as provisional can be.
-- The time range and the keyset are conditions of the index (its decided_at, id
-- columns); the queue is its first column.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter to
        -- check, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL AND :status::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                          AND (:status::text IS NULL OR :status = CASE
                               WHEN EXISTS (SELECT 1 FROM review_decisions AS s
                                            WHERE s.supersedes = d.id) THEN 'superseded'
                               WHEN d.provisional AND NOT EXISTS (
                                    SELECT 1 FROM decision_confirmations AS c
                                    WHERE c.decision_id = d.id) THEN 'provisional'
                               ELSE 'effective' END)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE :newest_first AND d.queue = q.name
               AND d.provisional
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) < (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at DESC, d.id DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT d.id, d.decided_at
             FROM review_decisions AS d
             WHERE NOT :newest_first AND d.queue = q.name
               AND d.provisional
               AND d.decided_at >= :decided_after AND d.decided_at < :decided_before
               AND (d.decided_at, d.id) > (:at::timestamptz, :after_id::bigint)
             ORDER BY d.decided_at, d.id
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;

-- name: decisions_search_superseded
-- Served by review_decisions_search_superseded (queue, supersedes_decided_at, supersedes)
-- WHERE supersedes IS NOT NULL AND item_id > 0, then review_decisions_pkey for the decision
-- each row names. SUPERSEDED decisions are the ones a later row (an override or an
-- overturn, recorded in the queue of the decision it supersedes) names; that row carries
-- the named decision's time (migration 0040), so the walk reads the superseded decisions of
-- each queue in their own (decided_at, id) order and stops at a page like the walks above.
-- The status needs no check: every row walked names a superseded decision.
SELECT q.name AS queue, p.id, p.decided_at, p.matched, p.walked
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT w.id, w.decided_at, w.matched, w.walked
    FROM (
        -- A subquery per row read, not a join: the rows stay in the walk's order, so the
        -- LIMIT below stops the walk as soon as the page is full. Without a filter on the
        -- decision itself, every row walked matches: the decision is not probed at all.
        SELECT v.id, v.decided_at, v.walked,
               (:reviewer::text IS NULL AND :verdict::text IS NULL
                AND :reason_code::text IS NULL)
               OR (SELECT (:reviewer::text IS NULL OR d.reviewer = :reviewer)
                          AND (:verdict::text IS NULL OR d.outcome = :verdict)
                          AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
                   FROM review_decisions AS d WHERE d.id = v.id) AS matched
        FROM (
            SELECT u.*, row_number() OVER () AS walked
            FROM (
            (SELECT s.supersedes AS id, s.supersedes_decided_at AS decided_at
             FROM review_decisions AS s
             WHERE :newest_first AND s.queue = q.name
               AND s.supersedes IS NOT NULL AND s.item_id > 0  -- the index's condition
               AND s.supersedes_decided_at >= :decided_after
               AND s.supersedes_decided_at < :decided_before
               AND (s.supersedes_decided_at, s.supersedes)
                   < (:at::timestamptz, :after_id::bigint)
             ORDER BY s.supersedes_decided_at DESC, s.supersedes DESC
             LIMIT :scan_cap)
            UNION ALL
            (SELECT s.supersedes AS id, s.supersedes_decided_at AS decided_at
             FROM review_decisions AS s
             WHERE NOT :newest_first AND s.queue = q.name
               AND s.supersedes IS NOT NULL AND s.item_id > 0  -- the index's condition
               AND s.supersedes_decided_at >= :decided_after
               AND s.supersedes_decided_at < :decided_before
               AND (s.supersedes_decided_at, s.supersedes)
                   > (:at::timestamptz, :after_id::bigint)
             ORDER BY s.supersedes_decided_at, s.supersedes
             LIMIT :scan_cap)
            ) AS u
        ) AS v
    ) AS w
    WHERE w.matched OR w.walked = :scan_cap
    LIMIT :page_size
) AS p;
