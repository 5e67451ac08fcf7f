-- Step-up (issue 24) stated once: the decision statements and their diagnoses ask
-- casework_recent_enough instead of repeating the test. A queue (or workflow) that sets
-- neither require_auth_within_seconds nor require_acr passes everyone; otherwise the login
-- must be at most that old (a NULL auth_time, as for a CLI token, never is) and of that
-- acr. A plain SQL expression, STABLE for now(): the planner inlines it, so a fence costs
-- what the written-out test did.
CREATE FUNCTION casework_recent_enough(
    require_seconds integer, require_acr text, auth_time timestamptz, acr text
) RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT (require_seconds IS NULL
            OR coalesce(auth_time > now() - make_interval(secs => require_seconds), false))
       AND (require_acr IS NULL OR coalesce(require_acr = acr, false))
$$;

REVOKE ALL ON FUNCTION casework_recent_enough(integer, text, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_recent_enough(integer, text, timestamptz, text)
    TO casework_app;
