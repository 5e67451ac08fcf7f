-- Grants follow the provider (issue 24): a console session's grants are recomputed from the
-- ID token of a refresh-token grant at least every CASEWORK_SESSION_REFRESH_SECONDS, so a
-- group removed at the provider removes access without waiting for the next login.
--
-- - `grants_at`: when the grants were last computed (the login, then each refresh).
-- - `refresh_claimed_at`: a process is refreshing the session now. A refresh token may be
--   single-use (providers rotate them), so one process at a time holds the claim; a claim
--   older than the refresh loop's lease is taken over (its process died mid-refresh), and the
--   holder's write is fenced by the claim's time.

ALTER TABLE sessions
    ADD COLUMN grants_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN refresh_claimed_at timestamptz;

-- The refresh loop's scan: live sessions that can be refreshed, oldest grants first.
CREATE INDEX sessions_refresh_due ON sessions (grants_at)
    WHERE ended_at IS NULL AND refresh_token IS NOT NULL;
