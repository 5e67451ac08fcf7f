-- Running the service with its own role alone, and tokens an operator can account for.

-- `casework serve --no-migrate` runs as casework_app and refuses to start while a migration
-- is pending, so that role reads the migration log (never writes it).
GRANT SELECT ON schema_migrations TO casework_app;

ALTER TABLE api_tokens
    -- When the token last authenticated, to within a minute: `casework token list`.
    ADD COLUMN last_used_at timestamptz,
    -- Minted by `casework serve --demo`, whose next run revokes them.
    ADD COLUMN demo boolean NOT NULL DEFAULT false;

-- The service records a token's use; every other column stays read-only to it, so it still
-- cannot mint, widen, extend or un-revoke a token.
GRANT UPDATE (last_used_at) ON api_tokens TO casework_app;
