-- name: token_insert
INSERT INTO api_tokens (token_hash, user_name, role, queues, expires_at)
VALUES (:token_hash, :user_name, :role, :queues, :expires_at)
RETURNING id, user_name, role, queues, expires_at;

-- name: token_get_active
SELECT t.id, t.user_name, t.role, t.queues, t.expires_at
FROM api_tokens AS t
WHERE t.token_hash = :token_hash
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now());

-- name: tokens_revoke_for_user
UPDATE api_tokens
SET revoked_at = now()
WHERE user_name = :user_name AND revoked_at IS NULL
RETURNING id;
