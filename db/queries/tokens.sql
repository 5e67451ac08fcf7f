-- name: token_insert
-- $1 token hash, $2 user name, $3 role, $4 queues, $5 expires at
INSERT INTO api_tokens (token_hash, user_name, role, queues, expires_at)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, user_name, role, queues, expires_at;

-- name: token_get_active
-- $1 token hash
SELECT t.id, t.user_name, t.role, t.queues, t.expires_at
FROM api_tokens AS t
WHERE t.token_hash = $1
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now());

-- name: health_check
SELECT 1 AS ok;

-- name: tokens_revoke_for_user
-- $1 user name
UPDATE api_tokens
SET revoked_at = now()
WHERE user_name = $1 AND revoked_at IS NULL
RETURNING id;
