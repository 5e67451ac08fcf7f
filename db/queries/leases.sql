-- name: lease_renew
-- The renewal is written to the item's timeline (`item_events`, kind `renewed`, with the
-- new expiry as `until`).
-- Fence: the token must match a live lease of the caller on a pending item, in a queue the
-- caller's token covers.
WITH renewed AS (
UPDATE review_items AS i
SET lease_expires_at = now() + make_interval(secs => q.lease_ttl_seconds),
    updated_at = now()
FROM queues AS q
WHERE q.name = i.queue
  AND i.id = :item_id
  AND i.lease_token = :lease_token
  AND i.lease_owner = :actor
  AND i.state = 'pending'
  AND i.lease_expires_at > now()
  AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, detail)
    SELECT r.id, r.queue, 'renewed', :actor, :actor_role, :lease_token, r.lease_started_at,
           jsonb_build_object('until', r.lease_expires_at)
    FROM renewed AS r
)
SELECT renewed.*, hint.notification
FROM renewed,
     casework_hint(kind => 'renewed', queue => renewed.queue, item_id => renewed.id)
         AS hint (notification);

-- name: lease_release
-- A released item is claimable at once and is not an abandonment. The release is written
-- to the item's timeline (`item_events`, kind `released`).
-- Fence: the token must match a live lease of the caller on a pending item, in a queue the
-- caller's token covers.
WITH released AS (
UPDATE review_items AS i
SET lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = now()
WHERE i.id = :item_id
  AND i.lease_token = :lease_token
  AND i.lease_owner = :actor
  AND i.state = 'pending'
  AND i.lease_expires_at > now()
  AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at)
    SELECT r.id, r.queue, 'released', :actor, :actor_role, :lease_token, r.lease_started_at
    FROM released AS r
)
SELECT released.*, hint.notification
FROM released,
     casework_hint(kind => 'released', queue => released.queue, item_id => released.id)
         AS hint (notification);

-- name: deadlines_get_next
-- What the process timer waits for, after :after: the next moment a live lease in these
-- queues runs out, and the next moment a waiting item in them falls due. Reads only.
SELECT (SELECT min(i.lease_expires_at)
        FROM review_items AS i
        WHERE i.queue = ANY (:queues::text[])
          AND i.state = 'pending'
          AND i.lease_token IS NOT NULL
          AND i.lease_expires_at > :after) AS next_expiry,
       (SELECT min(i.due_at)
        FROM review_items AS i
        WHERE i.queue = ANY (:queues::text[])
          AND i.state = 'pending'
          AND i.due_at > :after) AS next_due;

-- name: leases_get_expired_between
-- Leases that ran out in (after, until]: what the expiry timer announces. Reads only.
SELECT i.id, i.queue, i.lease_owner, i.lease_expires_at
FROM review_items AS i
WHERE i.queue = ANY (:queues::text[])
  AND i.state = 'pending'
  AND i.lease_token IS NOT NULL
  AND i.lease_expires_at > :after
  AND i.lease_expires_at <= :until
ORDER BY i.lease_expires_at, i.id;

-- name: lease_revoke
-- A manager ends someone else's live lease: the holder's token is stale at once (its next
-- renew, release or decision is refused), the item is claimable again, and the revocation
-- is not an abandonment. The timeline row (`revoked`) carries the revoked lease's token,
-- start and owner, the manager and the reason.
-- Fence: a live lease on a pending item, in a queue the caller's token covers. `target`
-- reads the lease from the row it locks, so the row written is the lease that ended.
WITH target AS (
    SELECT i.id, i.queue, i.lease_owner, i.lease_token, i.lease_started_at
    FROM review_items AS i
    WHERE i.id = :item_id
      AND i.state = 'pending'
      AND i.lease_token IS NOT NULL
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF i
),
revoked AS (
    UPDATE review_items AS i
    SET lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, body, detail, authentication_id)
    SELECT t.id, t.queue, 'revoked', :actor, :actor_role, t.lease_token, t.lease_started_at,
           :reason, jsonb_build_object('owner', t.lease_owner), :authentication_id
    FROM target AS t
)
SELECT revoked.*, target.lease_owner AS revoked_owner, hint.notification
FROM revoked
JOIN target ON target.id = revoked.id,
     casework_hint(kind => 'revoked', queue => revoked.queue, item_id => revoked.id)
         AS hint (notification);

-- name: leases_get_held
-- The caller's live leases, soonest to run out first: in :queue (NULL: every queue the
-- token covers, :queue_scope NULL: all). Reads the live leases of those queues
-- (review_items_lease_expiry) and keeps the caller's.
SELECT i.*
FROM review_items AS i
WHERE i.lease_owner = :actor
  AND i.state = 'pending'
  AND i.lease_token IS NOT NULL
  AND i.lease_expires_at > now()
  AND (:queue::text IS NULL OR i.queue = :queue)
  AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
ORDER BY i.lease_expires_at, i.id;

-- name: leases_revoke_for_user
-- The one revocation routine (server/domain/identity/revocation.py) ends every live lease
-- :user_name holds, on review and exception items alike, as lease_revoke ends one: each
-- holder's token is stale at once, each item claimable again, none counted as abandoned.
-- Each item's timeline gets a `revoked` row naming the owner, the revoker and :reason (why:
-- "access revoked: <source>: <reason>"), with the revoker's authentication when known.
-- Fence: live leases only (pending, a token, unexpired). Reads the live leases of every
-- queue (review_items_lease_expiry) and keeps the user's.
WITH target AS (
    SELECT i.id, i.queue, i.lease_owner, i.lease_token, i.lease_started_at
    FROM review_items AS i
    WHERE i.lease_owner = :user_name
      AND i.state = 'pending'
      AND i.lease_token IS NOT NULL
      AND i.lease_expires_at > now()
    FOR UPDATE OF i
),
revoked AS (
    UPDATE review_items AS i
    SET lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.id, i.queue
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, body, detail, authentication_id)
    SELECT t.id, t.queue, 'revoked', :actor, :actor_role, t.lease_token, t.lease_started_at,
           :reason, jsonb_build_object('owner', t.lease_owner, 'access_revoked', true),
           :authentication_id
    FROM target AS t
)
SELECT revoked.id, revoked.queue, hint.notification
FROM revoked,
     casework_hint(kind => 'revoked', queue => revoked.queue, item_id => revoked.id)
         AS hint (notification);
