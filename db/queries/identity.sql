-- name: principal_upsert
-- An identity the provider vouched for, by issuer + subject. A new one takes :user_name as
-- its handle unless a person or a CLI token already goes by it (a provider's user may not
-- take over an existing name: they get :fallback_user_name). A known one keeps its handle;
-- its display name follows the claims, and its last sighting is noted at most once a minute.
-- Nothing is returned when nothing changed: principal_get reads it then.
INSERT INTO principals AS p (issuer, subject, user_name, display_name, kind)
SELECT :issuer, :subject,
       CASE WHEN EXISTS (SELECT 1 FROM principals WHERE user_name = :user_name)
                 OR EXISTS (SELECT 1 FROM api_tokens WHERE user_name = :user_name)
            THEN :fallback_user_name ELSE :user_name END,
       :display_name, :kind
ON CONFLICT (issuer, subject) DO UPDATE
SET display_name = EXCLUDED.display_name, last_seen_at = now()
WHERE p.display_name IS DISTINCT FROM EXCLUDED.display_name
   OR p.last_seen_at < now() - interval '60 seconds'
RETURNING p.id, p.user_name, p.display_name, p.kind, p.revoked_at;

-- name: principal_get
SELECT id, user_name, display_name, kind, revoked_at
FROM principals
WHERE issuer = :issuer AND subject = :subject;

-- name: session_insert
INSERT INTO sessions (token_hash, principal_id, grants, provider_sid, id_token, refresh_token,
                      auth_time, acr, idle_seconds, expires_at)
VALUES (:token_hash, :principal_id, :grants, :provider_sid, :id_token, :refresh_token,
        :auth_time, :acr, :idle_seconds, now() + make_interval(secs => :max_seconds))
RETURNING id, expires_at;

-- name: session_get_live
-- A session that has not ended, run out (absolute or idle), nor begun before its person was
-- revoked. The lookup also notes the session's use, at most once per
-- :used_resolution_seconds, which is what keeps an active session from going idle.
WITH found AS (
    SELECT s.id, s.grants, s.auth_time, s.acr, s.expires_at, s.idle_seconds,
           p.id AS principal_id, p.issuer, p.subject, p.user_name, p.display_name, p.kind
    FROM sessions AS s
    JOIN principals AS p ON p.id = s.principal_id
    WHERE s.token_hash = :token_hash
      AND s.ended_at IS NULL
      AND s.expires_at > now()
      AND s.last_seen_at > now() - make_interval(secs => s.idle_seconds)
      AND (p.revoked_at IS NULL OR p.revoked_at < s.created_at)
), used AS (
    UPDATE sessions AS s
    SET last_seen_at = now()
    FROM found
    WHERE s.id = found.id
      AND s.last_seen_at < now() - make_interval(secs => :used_resolution_seconds)
    RETURNING s.id
)
SELECT found.* FROM found;

-- name: session_end
-- The browser's own session, at logout: what RP-initiated logout needs of it.
UPDATE sessions
SET ended_at = now(), end_reason = :reason
WHERE token_hash = :token_hash AND ended_at IS NULL
RETURNING id, id_token, provider_sid;

-- name: session_end_by_id
-- The session's row whether or not this call ended it: `ended` tells which.
WITH ended AS (
    UPDATE sessions
    SET ended_at = now(), end_reason = :reason
    WHERE id = :session_id AND ended_at IS NULL
    RETURNING id
)
SELECT s.id, p.user_name, EXISTS (SELECT 1 FROM ended) AS ended
FROM sessions AS s
JOIN principals AS p ON p.id = s.principal_id
WHERE s.id = :session_id;

-- name: sessions_end_for_user
UPDATE sessions AS s
SET ended_at = now(), end_reason = :reason
FROM principals AS p
WHERE p.id = s.principal_id AND p.user_name = :user_name AND s.ended_at IS NULL
RETURNING s.id;

-- name: sessions_end_for_provider_sid
-- Back-channel logout naming a session of the provider's: every Casework session begun in it.
UPDATE sessions AS s
SET ended_at = now(), end_reason = :reason
FROM principals AS p
WHERE p.id = s.principal_id AND p.issuer = :issuer
  AND s.provider_sid = :provider_sid AND s.ended_at IS NULL
RETURNING s.id, p.user_name;

-- name: sessions_list
-- Live sessions (with include_ended, ended and run-out ones too), oldest first.
SELECT s.id, p.user_name, p.display_name, p.issuer, p.subject, s.grants, s.auth_time,
       s.created_at, s.last_seen_at, s.expires_at,
       least(s.expires_at, s.last_seen_at + make_interval(secs => s.idle_seconds)) AS ends_at,
       s.ended_at, s.end_reason
FROM sessions AS s
JOIN principals AS p ON p.id = s.principal_id
WHERE :include_ended
   OR (s.ended_at IS NULL AND s.expires_at > now()
       AND s.last_seen_at > now() - make_interval(secs => s.idle_seconds))
ORDER BY s.id;

-- name: principal_revoke
-- Refuses every credential of the person issued before now (sessions and access tokens).
UPDATE principals
SET revoked_at = now()
WHERE user_name = :user_name
RETURNING id, revoked_at;

-- name: principal_revocation_insert
INSERT INTO principal_revocations (user_name, source, revoked_by, reason, sessions_ended,
                                   tokens_revoked, leases_released)
VALUES (:user_name, :source, :revoked_by, :reason, :sessions_ended, :tokens_revoked,
        :leases_released)
RETURNING id, at;

-- name: authentication_record
-- One row per distinct way of authenticating (the fingerprint covers every column), so a
-- busy session or token adds one row, not one per request. The table is append-only: an
-- existing row is read back, never updated.
WITH inserted AS (
    INSERT INTO authentications (fingerprint, kind, user_name, role, issuer, subject,
                                 session_id, token_id, client_id, auth_time, acr, rules)
    VALUES (:fingerprint, :kind, :user_name, :role, :issuer, :subject, :session_id, :token_id,
            :client_id, :auth_time, :acr, :rules)
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING id
)
SELECT id FROM inserted
UNION ALL
SELECT id FROM authentications WHERE fingerprint = :fingerprint
LIMIT 1;

-- name: logout_token_insert
-- A back-channel logout token is acted on once: a replay returns no row.
INSERT INTO logout_tokens (issuer, jti)
VALUES (:issuer, :jti)
ON CONFLICT DO NOTHING
RETURNING jti;

-- name: queue_names_list
SELECT name FROM queues ORDER BY name;

-- name: sessions_claim_refresh
-- Up to :limit live sessions with a refresh token whose grants are older than
-- :refresh_seconds, claimed for this process (a claim older than :lease_seconds is taken
-- over). SKIP LOCKED: processes claiming at once each take other sessions, never the same.
UPDATE sessions AS s
SET refresh_claimed_at = clock_timestamp()
FROM principals AS p
WHERE p.id = s.principal_id
  AND s.id IN (
      SELECT id FROM sessions
      WHERE ended_at IS NULL
        AND refresh_token IS NOT NULL
        AND grants_at < now() - make_interval(secs => :refresh_seconds)
        AND expires_at > now()
        AND last_seen_at > now() - make_interval(secs => idle_seconds)
        AND (refresh_claimed_at IS NULL
             OR refresh_claimed_at < now() - make_interval(secs => :lease_seconds))
      ORDER BY grants_at
      LIMIT :limit
      FOR UPDATE SKIP LOCKED
  )
RETURNING s.id, s.refresh_token, s.refresh_claimed_at AS claimed_at, p.issuer, p.subject,
          p.user_name;

-- name: session_refreshed
-- The refresh's outcome, written only while this process's claim holds.
UPDATE sessions
SET grants = :grants, grants_at = now(), refresh_claimed_at = NULL,
    refresh_token = coalesce(:refresh_token, refresh_token),
    id_token = coalesce(:id_token, id_token)
WHERE id = :session_id AND refresh_claimed_at = :claimed_at AND ended_at IS NULL
RETURNING id;

-- name: session_refresh_release
-- Nothing learnt (the provider could not be asked): the session is due again next round.
UPDATE sessions
SET refresh_claimed_at = NULL
WHERE id = :session_id AND refresh_claimed_at = :claimed_at
RETURNING id;

-- name: session_refresh_end
-- The provider refused the refresh, or the rules grant nothing now: the session ends.
UPDATE sessions
SET ended_at = now(), end_reason = :reason, refresh_claimed_at = NULL
WHERE id = :session_id AND refresh_claimed_at = :claimed_at AND ended_at IS NULL
RETURNING id;
