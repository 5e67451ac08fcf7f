-- NOTIFY refuses a payload of 8000 bytes or more, and the statement that sent it fails with
-- it: an overdue pass that moved exceptions of many workflows with long names made the
-- claim that triggered it fail. A hint that long is sent cut: its kind and queue, and
-- `cut`, which tells every process to resync its subscribers, as after a reconnect
-- (server/events/channels.py). The write goes through. Over Redis (`casework.events` =
-- 'app'), the service publishes the same cut hint.

CREATE OR REPLACE FUNCTION casework_notify(payload text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    sent text := payload;
BEGIN
    IF octet_length(payload) > 7999 THEN
        sent := json_build_object('k', payload::json ->> 'k', 'q', payload::json ->> 'q',
                                  'cut', true)::text;
    END IF;
    IF coalesce(current_setting('casework.events', true), '') <> 'app' THEN
        PERFORM pg_notify('casework_events', sent);
    END IF;
    RETURN sent;
END
$$;
