-- name: authentications_get_by_ids
-- How the actors of the rows asked about authenticated (their `authentication_id`), for
-- Decision.authentication, ItemEvent.authentication and the audit pack. By primary key.
SELECT a.id, a.kind, a.user_name, a.role, a.issuer, a.subject, a.session_id, a.token_id,
       a.client_id, a.auth_time, a.acr, a.rules, a.recorded_at
FROM authentications AS a
WHERE a.id = ANY (:ids::bigint[]);
