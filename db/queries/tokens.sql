-- name: token_insert
INSERT INTO api_tokens (token_hash, user_name, role, queues, expires_at, demo)
VALUES (:token_hash, :user_name, :role, :queues, :expires_at, :demo)
RETURNING id, user_name, role, queues, expires_at;

-- name: token_get_active
-- The lookup also notes that the token was used, writing only when the note is older than
-- :used_resolution_seconds, so almost every lookup writes nothing. The condition is on the
-- table's row (not the snapshot's), so processes looking up one token at once write once.
WITH found AS (
    SELECT t.id, t.user_name, t.role, t.queues, t.expires_at
    FROM api_tokens AS t
    WHERE t.token_hash = :token_hash
      AND t.revoked_at IS NULL
      AND (t.expires_at IS NULL OR t.expires_at > now())
), used AS (
    UPDATE api_tokens AS t
    SET last_used_at = now()
    FROM found
    WHERE t.id = found.id
      AND (t.last_used_at IS NULL
           OR t.last_used_at < now() - make_interval(secs => :used_resolution_seconds))
    RETURNING t.id
)
SELECT found.id, found.user_name, found.role, found.queues, found.expires_at
FROM found;

-- name: tokens_revoke_for_user
UPDATE api_tokens
SET revoked_at = now()
WHERE user_name = :user_name AND revoked_at IS NULL
RETURNING id;

-- name: token_revoke
-- The token's row whether or not this call revoked it: `revoked` tells which.
WITH revoked AS (
    UPDATE api_tokens
    SET revoked_at = now()
    WHERE id = :token_id AND revoked_at IS NULL
    RETURNING id
)
SELECT t.id, t.user_name, EXISTS (SELECT 1 FROM revoked) AS revoked
FROM api_tokens AS t
WHERE t.id = :token_id;

-- name: tokens_revoke_demo
UPDATE api_tokens
SET revoked_at = now()
WHERE demo AND revoked_at IS NULL
RETURNING id;

-- name: tokens_list
-- Never the hash: what an operator needs to decide what to revoke.
SELECT t.id, t.user_name, t.role, t.queues, t.created_at, t.expires_at, t.last_used_at,
       t.revoked_at, t.demo
FROM api_tokens AS t
WHERE :include_inactive
   OR (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()))
ORDER BY t.id;
