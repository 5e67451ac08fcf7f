-- plain+notify's decision (peer_plain.py): fenced on (item, token, owner, pending,
-- unexpired), the decision row inserted and the hint sent, all in one statement.
-- $1 item, $2 lease token, $3 verdict, $4 actor, $5 channel, $6 the hint's text up to the
-- item's id.
WITH decided AS (
    UPDATE peer.items
    SET state = 'decided', lease_owner = NULL, lease_token = NULL,
        lease_expires_at = NULL, updated_at = now()
    WHERE id = $1 AND lease_token = $2 AND lease_owner = $4
      AND state = 'pending' AND lease_expires_at > now()
    RETURNING id
), recorded AS (
    INSERT INTO peer.decisions (item_id, verdict, reviewer, lease_token)
    SELECT id, $3, $4, $2 FROM decided
    RETURNING id, item_id
)
SELECT id, pg_notify($5, $6::text || item_id || ',"d":' || id || '}') FROM recorded
