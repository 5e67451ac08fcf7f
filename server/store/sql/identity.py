"""The statements of db/queries/identity.sql, as symbols.

Generated from db/queries/identity.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/identity.sql:1
PRINCIPAL_UPSERT = Query("principal_upsert", lambda *, issuer, subject, user_name, fallback_user_name, display_name, kind: None)
"""An identity the provider vouched for, by issuer + subject. A new one takes :user_name as
its handle unless a person or a CLI token already goes by it (a provider's user may not
take over an existing name: they get :fallback_user_name). A known one keeps its handle;
its display name follows the claims, and its last sighting is noted at most once a minute.
Nothing is returned when nothing changed: principal_get reads it then.
"""

# db/queries/identity.sql:19
PRINCIPAL_GET = Query("principal_get", lambda *, issuer, subject: None)

# db/queries/identity.sql:24
SESSION_INSERT = Query("session_insert", lambda *, token_hash, principal_id, grants, provider_sid, id_token, refresh_token, auth_time, acr, idle_seconds, max_seconds: None)

# db/queries/identity.sql:31
SESSION_GET_LIVE = Query("session_get_live", lambda *, token_hash, used_resolution_seconds: None)
"""A session that has not ended, run out (absolute or idle), nor begun before its person was
revoked. The lookup also notes the session's use, at most once per
:used_resolution_seconds, which is what keeps an active session from going idle.
"""

# db/queries/identity.sql:55
SESSION_END = Query("session_end", lambda *, reason, token_hash: None)
"""The browser's own session, at logout: what RP-initiated logout needs of it."""

# db/queries/identity.sql:62
SESSION_END_BY_ID = Query("session_end_by_id", lambda *, reason, session_id: None)
"""The session's row whether or not this call ended it: `ended` tells which."""

# db/queries/identity.sql:75
SESSIONS_END_FOR_USER = Query("sessions_end_for_user", lambda *, reason, user_name: None)

# db/queries/identity.sql:82
SESSIONS_END_FOR_PROVIDER_SID = Query("sessions_end_for_provider_sid", lambda *, reason, issuer, provider_sid: None)
"""Back-channel logout naming a session of the provider's: every Casework session begun in it."""

# db/queries/identity.sql:91
SESSIONS_LIST = Query("sessions_list", lambda *, include_ended: None)
"""Live sessions (with include_ended, ended and run-out ones too), oldest first."""

# db/queries/identity.sql:104
PRINCIPAL_REVOKE = Query("principal_revoke", lambda *, user_name: None)
"""Refuses every credential of the person issued before now (sessions and access tokens)."""

# db/queries/identity.sql:111
PRINCIPAL_REVOCATION_INSERT = Query("principal_revocation_insert", lambda *, user_name, source, revoked_by, reason, sessions_ended, tokens_revoked, leases_released: None)

# db/queries/identity.sql:118
AUTHENTICATION_RECORD = Query("authentication_record", lambda *, fingerprint, kind, user_name, role, issuer, subject, session_id, token_id, client_id, auth_time, acr, rules: None)
"""One row per distinct way of authenticating (the fingerprint covers every column), so a
busy session or token adds one row, not one per request. The table is append-only: an
existing row is read back, never updated.
"""

# db/queries/identity.sql:135
LOGOUT_TOKEN_INSERT = Query("logout_token_insert", lambda *, issuer, jti: None)
"""A back-channel logout token is acted on once: a replay returns no row."""

# db/queries/identity.sql:142
QUEUE_NAMES_LIST = Query("queue_names_list", lambda: None)

# db/queries/identity.sql:145
SESSIONS_CLAIM_REFRESH = Query("sessions_claim_refresh", lambda *, refresh_seconds, lease_seconds, limit: None)
"""Up to :limit live sessions with a refresh token whose grants are older than
:refresh_seconds, claimed for this process (a claim older than :lease_seconds is taken
over). SKIP LOCKED: processes claiming at once each take other sessions, never the same.
"""

# db/queries/identity.sql:169
SESSION_REFRESHED = Query("session_refreshed", lambda *, grants, refresh_token, id_token, session_id, claimed_at: None)
"""The refresh's outcome, written only while this process's claim holds."""

# db/queries/identity.sql:178
SESSION_REFRESH_RELEASE = Query("session_refresh_release", lambda *, session_id, claimed_at: None)
"""Nothing learnt (the provider could not be asked): the session is due again next round."""

# db/queries/identity.sql:185
SESSION_REFRESH_END = Query("session_refresh_end", lambda *, reason, session_id, claimed_at: None)
"""The provider refused the refresh, or the rules grant nothing now: the session ends."""
