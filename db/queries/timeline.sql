-- name: item_events_get_pages
-- One page of each item's timeline (ReviewItem.events), oldest first, in one statement for
-- every item of :item_ids (a dashboard's): what item_events stores, merged with what is
-- read from the records that already hold it (server/domain/timeline/events.py names the kinds).
--   - A claim (`claimed`, at its lease's start) is read from any record of its lease: the
--     decision made under it, a release, lapse, revocation, renewal or hold of it in
--     item_events, or the item while it holds the lease; once per token.
--   - A lease that ran out and that no claim has noticed yet is a `lapsed` read from the
--     item, at its expiry; the claim that notices it writes the row (with the same time).
--   - Decisions: a verdict is `decided`, or `escalated` for an escalation, and an overturn
--     `overturned`. The queue an escalation went to is the queue the item was in next.
--   - Second review (migration 0020): a provisional decision is `second_review` (the item
--     went from the decision's queue to the queue it was in next), its confirmation
--     `confirmed` (read from decision_confirmations, which carries the second reviewer's
--     lease like a decision does), and an override `overridden`, in the queue its lease
--     was held in.
--   - A decision sampled for QA is `qa_sampled`, read from its copy (`qa_of`); `qa_checked`
--     is stored, naming the decision in its detail.
--   - A message to the owners (notification_deliveries, 0034) is `notified`, read from
--     notification_deliveries, at the moment it became due (actor casework, role system),
--     with its rule, channel, state and the time it was sent.
-- Order: (at, rank, ref), a total order. `rank` puts what happened at one instant in the
-- order it must have happened: an arrival, a lease's end, a claim, whatever was done under
-- it, a decision. `ref` is the row's id in its table, or for a claim a number made from its
-- token. The page starts after (:after_at, :after_rank, :after_ref) unless :after_at is NULL.
-- A lease is never shown by its token (a fence credential): `lease_id` is a number made
-- from it by a one-way hash, as hexadecimal.
-- `authentication_id`: how the actor authenticated (migration 0023), on the kinds people
-- write; NULL on older rows, on what Casework does itself and on claims.
-- Reads only each item's rows: item_events_item, review_decisions_item, the item's key.
WITH items AS (
    SELECT i.id, i.queue, i.state, i.lease_token, i.lease_owner, i.lease_started_at,
           i.lease_expires_at, q.holder_role
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.id = ANY (:item_ids::bigint[])
),
stored AS (
    SELECT e.*,
           -- Whose lease it was: the actor's, but for a revocation (a manager ending
           -- someone else's lease), which names the lease's owner in its detail.
           CASE WHEN e.lease_token IS NULL THEN NULL
                WHEN e.kind = 'revoked' THEN e.detail ->> 'owner'
                ELSE e.actor END AS lease_owner
    FROM item_events AS e
    WHERE e.item_id = ANY (:item_ids::bigint[])
),
decisions AS (
    SELECT d.*
    FROM review_decisions AS d
    WHERE d.item_id = ANY (:item_ids::bigint[])
),
confirmations AS (
    SELECT c.*
    FROM decision_confirmations AS c
    WHERE c.item_id = ANY (:item_ids::bigint[])
),
lease_records AS (
    SELECT d.item_id, d.lease_token, d.reviewer AS owner, d.reviewer_role AS owner_role,
           d.lease_started_at, coalesce(d.review_queue, d.queue) AS queue, 1 AS preference
    FROM decisions AS d
    WHERE d.lease_token IS NOT NULL AND d.lease_started_at IS NOT NULL
    UNION ALL
    SELECT c.item_id, c.lease_token, c.confirmed_by, c.confirmed_by_role, c.lease_started_at,
           c.review_queue, 1
    FROM confirmations AS c
    WHERE c.lease_started_at IS NOT NULL
    UNION ALL
    -- A revocation's actor is the manager; the owner held leases in the queue as its
    -- holder role, like every claimer there.
    SELECT e.item_id, e.lease_token, e.lease_owner,
           CASE WHEN e.kind = 'revoked'
                THEN (SELECT q.holder_role FROM queues AS q WHERE q.name = e.queue)
                ELSE e.actor_role END,
           e.lease_started_at, e.queue, 2
    FROM stored AS e
    WHERE e.kind IN ('released', 'lapsed', 'revoked', 'renewed', 'held')
      AND e.lease_token IS NOT NULL AND e.lease_started_at IS NOT NULL
    UNION ALL
    SELECT i.id, i.lease_token, i.lease_owner, i.holder_role, i.lease_started_at, i.queue, 3
    FROM items AS i
    WHERE i.state = 'pending' AND i.lease_token IS NOT NULL AND i.lease_started_at IS NOT NULL
),
claims AS (
    SELECT DISTINCT ON (r.lease_token) r.*
    FROM lease_records AS r
    ORDER BY r.lease_token, r.preference
),
story AS (
    SELECT e.item_id, e.kind, e.at,
           CASE WHEN e.kind IN ('enqueued', 'reuploaded') THEN 10
                WHEN e.kind IN ('lapsed', 'released', 'revoked') THEN 20
                -- After the decision they follow from, recorded at the same instant.
                WHEN e.kind = 'qa_checked' THEN 60
                ELSE 40 END AS rank,
           e.id AS ref, e.queue, e.actor, e.actor_role, e.body, e.detail,
           e.lease_token, e.lease_owner, e.lease_started_at,
           -- QA_CHECKED: the decision checked (migration 0021).
           (e.detail ->> 'decision_id')::bigint AS decision_id, e.recorded_at,
           e.authentication_id
    FROM stored AS e
    UNION ALL
    SELECT c.item_id, 'claimed', c.lease_started_at, 30,
           ('x' || left(encode(sha256(convert_to(c.lease_token::text, 'UTF8')), 'hex'), 15))
               ::bit(60)::bigint,
           c.queue, c.owner, c.owner_role, NULL, NULL,
           c.lease_token, c.owner, c.lease_started_at, NULL, NULL, NULL::bigint
    FROM claims AS c
    UNION ALL
    -- After a noticed lapse (rank 20): a reader who saw it unnoticed does not see it again.
    SELECT i.id, 'lapsed', i.lease_expires_at, 21, 0,
           i.queue, i.lease_owner, i.holder_role, NULL, NULL,
           i.lease_token, i.lease_owner, i.lease_started_at, NULL, NULL, NULL
    FROM items AS i
    WHERE i.state = 'pending' AND i.lease_token IS NOT NULL AND i.lease_expires_at <= now()
    UNION ALL
    SELECT d.item_id,
           CASE WHEN d.verdict = 'overturn' THEN 'overturned'
                WHEN d.verdict = 'escalate' THEN 'escalated'
                WHEN d.provisional THEN 'second_review'
                WHEN d.supersedes IS NOT NULL THEN 'overridden'
                ELSE 'decided' END,
           d.decided_at, 50, d.id, coalesce(d.review_queue, d.queue), d.reviewer,
           d.reviewer_role, d.note, NULL,
           d.lease_token, d.reviewer, d.lease_started_at, d.id, NULL, d.authentication_id
    FROM decisions AS d
    UNION ALL
    -- After the decisions of the same instant (rank 50): a confirmation follows its decision.
    SELECT c.item_id, 'confirmed', c.confirmed_at, 51, c.decision_id, c.review_queue,
           c.confirmed_by, c.confirmed_by_role, NULL, NULL,
           c.lease_token, c.confirmed_by, c.lease_started_at, c.decision_id, NULL,
           c.authentication_id
    FROM confirmations AS c
    UNION ALL
    -- A decision sampled for QA: read from its copy (review_items_one_qa_copy_each), made
    -- by the statement that recorded the decision, so at the same instant, after it.
    SELECT d.item_id, 'qa_sampled', c.created_at, 60, c.id, d.queue, 'casework', 'system',
           NULL, jsonb_build_object('to_queue', c.queue), NULL, NULL, NULL, d.id, NULL, NULL
    FROM decisions AS d
    JOIN review_items AS c ON c.qa_of = d.id
    UNION ALL
    -- Last at its instant: the change that made it due comes first.
    SELECT n.item_id, 'notified', n.created_at, 70, n.id,
           coalesce(o.queue, (SELECT i.queue FROM items AS i WHERE i.id = n.item_id)),
           'casework', 'system', NULL,
           jsonb_build_object('rule', r.name, 'channel', c.name, 'state', n.state,
                              'event', r.event, 'sent_at', n.sent_at),
           NULL, NULL, NULL, NULL, NULL, NULL
    FROM notification_deliveries AS n
    JOIN notification_rules AS r ON r.id = n.rule_id
    JOIN notification_channels AS c ON c.id = n.channel_id
    JOIN outbox_events AS o ON o.id = n.event_id
    WHERE n.item_id = ANY (:item_ids::bigint[])
),
ordered AS (
    SELECT s.*,
           lead(s.queue) OVER (PARTITION BY s.item_id ORDER BY s.at, s.rank, s.ref)
               AS next_queue
    FROM story AS s
),
page AS (
    SELECT o.*,
           row_number() OVER (PARTITION BY o.item_id ORDER BY o.at, o.rank, o.ref) AS n
    FROM ordered AS o
    WHERE :after_at::timestamptz IS NULL
       OR (o.at, o.rank, o.ref) > (:after_at::timestamptz, :after_rank::int, :after_ref::bigint)
)
SELECT p.item_id, p.kind, p.at, p.rank, p.ref, p.queue, p.actor, p.actor_role, p.body,
       p.recorded_at, p.decision_id, p.authentication_id,
       CASE WHEN p.lease_token IS NOT NULL AND p.lease_started_at IS NOT NULL THEN
           lpad(to_hex(('x' || left(encode(sha256(convert_to(p.lease_token::text, 'UTF8')),
                                           'hex'), 15))::bit(60)::bigint), 15, '0')
       END AS lease_id,
       p.lease_owner,
       p.lease_started_at,
       p.detail ->> 'evidence_hash' AS evidence_hash,
       CASE WHEN p.kind IN ('escalated', 'second_review') AND p.decision_id IS NOT NULL
            THEN p.queue
            ELSE p.detail ->> 'from_queue' END AS from_queue,
       CASE WHEN p.kind IN ('escalated', 'second_review') AND p.decision_id IS NOT NULL
            THEN coalesce(p.next_queue, i.queue)
            ELSE p.detail ->> 'to_queue' END AS to_queue,
       (p.detail ->> 'until')::timestamptz AS until,
       p.detail ->> 'reason' AS hold_reason,
       p.detail ->> 'reviewer' AS assignee,
       CASE WHEN p.kind = 'notified' THEN p.detail ->> 'rule' END AS notification_rule,
       CASE WHEN p.kind = 'notified' THEN p.detail ->> 'channel' END AS notification_channel,
       CASE WHEN p.kind = 'notified' THEN p.detail ->> 'state' END AS notification_state,
       CASE WHEN p.kind = 'notified' THEN p.detail ->> 'event' END AS notification_event,
       CASE WHEN p.kind = 'notified' THEN (p.detail ->> 'sent_at')::timestamptz END
           AS notification_sent_at
FROM page AS p
JOIN items AS i ON i.id = p.item_id
WHERE p.n <= :page_size
ORDER BY p.item_id, p.at, p.rank, p.ref;

-- name: item_note_add
-- Adds a note to an item's timeline (`item_events`, kind `noted`) and hints `noted`, so
-- that open consoles re-read. No lease is needed: whoever may see the item may note it.
-- Fence: a review item (an exception's item has its own history) in a queue the caller's
-- token covers (:queue_scope NULL: every queue). Not an item under a privacy policy, nor a
-- QA copy of one: their notes are sealed (sealed_note_add, db/queries/privacy_records.sql),
-- and this statement never stores their text.
WITH target AS (
    SELECT i.id, i.queue
    FROM review_items AS i
    LEFT JOIN review_decisions AS d ON d.id = i.qa_of
    LEFT JOIN review_items AS checked ON checked.id = d.item_id
    WHERE i.id = :item_id
      AND i.kind = 'review'
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      AND i.policy_version IS NULL
      AND checked.policy_version IS NULL
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, body, authentication_id)
    SELECT t.id, t.queue, 'noted', :actor, :actor_role, :body, :authentication_id
    FROM target AS t
    RETURNING *
)
-- `rank` and `ref`: where the note sits in item_events_get_pages' order.
SELECT n.*, 40 AS rank, n.id AS ref, hint.notification
FROM noted AS n,
     casework_hint(kind => 'noted', queue => n.queue, item_id => n.item_id)
         AS hint (notification);

-- name: item_events_get_latest_id
-- The newest row of the item's stored timeline (NULL: none): itemUpdates compares it before
-- and after it starts listening, as it compares the item's row, so that a note (which
-- changes no column of the item) made in between is not missed.
SELECT max(e.id) AS latest_id FROM item_events AS e WHERE e.item_id = :item_id;
