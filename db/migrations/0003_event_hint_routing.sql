-- Where a write's hint goes. By default the statement NOTIFYs, inside its transaction.
-- A service that fans out through Redis sets `casework.events = 'app'` on its connections:
-- then no NOTIFY is sent (NOTIFY serialises every notifying commit in the cluster), and
-- the service publishes the returned payload itself, after the commit.

CREATE FUNCTION casework_notify(payload text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('casework.events', true), '') <> 'app' THEN
        PERFORM pg_notify('casework_events', payload);
    END IF;
    RETURN payload;
END
$$;

REVOKE ALL ON FUNCTION casework_notify(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_notify(text) TO casework_app;
