-- plain+notify's claim (peer_plain.py): the first pending item whose lease is absent or
-- has run out, leased under a fresh token; its hint sent from the same statement.
-- $1 queue, $2 actor, $3 channel, $4 the hint's text up to the item's id.
WITH claimed AS (
    UPDATE peer.items
    SET lease_owner = $2, lease_token = gen_random_uuid(),
        lease_expires_at = now() + interval '10 minutes', updated_at = now()
    WHERE id = (SELECT id FROM peer.items
                WHERE queue = $1 AND state = 'pending'
                  AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                ORDER BY priority DESC, created_at
                LIMIT 1
                FOR UPDATE SKIP LOCKED)
    RETURNING id, lease_token
)
SELECT id, lease_token, pg_notify($3, $4::text || id || '}') FROM claimed
