-- A minimal review queue: the yardstick the peers bench holds Casework against.
-- The raw paths call the functions in `peer` over asyncpg; PostGraphile exposes the
-- wrappers in `peer_api` (the actor from a verified JWT) or `peer_open` (no authentication:
-- the actor is an argument) as its two mutations. All run the same statements. The
-- plain+notify path (peer_plain.py) sends its own plain statements against these tables.
--
-- A claim leases the first pending item (priority, then age) whose lease is absent or has
-- run out, under a fresh token; a decision is fenced on (item, token, owner, pending,
-- unexpired) in its WHERE clause and records a row in `peer.decisions`. Each of the two
-- sends one NOTIFY, as Casework's claim and decision each send one hint: on the channel
-- Casework uses, with a payload of the same keys. `SET peer.hints = 'off'` on a
-- connection sends none (the raw path without notifies).

CREATE SCHEMA peer;
CREATE SCHEMA peer_api;
CREATE SCHEMA peer_open;

CREATE TABLE peer.items (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text NOT NULL,
    priority         integer NOT NULL DEFAULT 0,
    payload          jsonb NOT NULL,
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'decided')),
    lease_owner      text,
    lease_token      uuid,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The claim's walk: pending items of a queue in the order they are handed out.
CREATE INDEX items_claim_order ON peer.items (queue, priority DESC, created_at)
    WHERE state = 'pending';

CREATE TABLE peer.decisions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id     bigint NOT NULL REFERENCES peer.items (id),
    verdict     text NOT NULL,
    reviewer    text NOT NULL,
    lease_token uuid NOT NULL,
    decided_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX decisions_item ON peer.decisions (item_id);

CREATE TYPE peer.claim AS (
    id               bigint,
    lease_token      uuid,
    lease_expires_at timestamptz,
    notification     text
);

CREATE TYPE peer.decision AS (
    id           bigint,
    item_id      bigint,
    notification text
);

-- Casework's casework_notify: NOTIFY inside the writing transaction unless the connection
-- says otherwise; the payload comes back either way.
CREATE FUNCTION peer.hint(payload text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF coalesce(current_setting('peer.hints', true), '') <> 'off' THEN
        PERFORM pg_notify('casework_events', payload);
    END IF;
    RETURN payload;
END
$$;

-- STRICT: no actor (a request without a verified subject), no claim.
CREATE FUNCTION peer.claim_next(queue text, actor text) RETURNS peer.claim
LANGUAGE sql VOLATILE STRICT AS $$
    WITH claimed AS (
        UPDATE peer.items AS i
        SET lease_owner      = claim_next.actor,
            lease_token      = gen_random_uuid(),
            lease_expires_at = now() + interval '10 minutes',
            updated_at       = now()
        WHERE i.id = (SELECT c.id
                      FROM peer.items AS c
                      WHERE c.queue = claim_next.queue
                        AND c.state = 'pending'
                        AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= now())
                      ORDER BY c.priority DESC, c.created_at
                      LIMIT 1
                      FOR UPDATE SKIP LOCKED)
        RETURNING i.id, i.queue, i.lease_token, i.lease_expires_at
    )
    SELECT c.id, c.lease_token, c.lease_expires_at,
           peer.hint(json_strip_nulls(json_build_object(
               'k', 'claimed', 'q', c.queue, 'i', c.id, 'd', NULL, 'from', c.queue))::text)
    FROM claimed AS c
$$;

CREATE FUNCTION peer.submit_decision(item_id bigint, lease_token uuid, verdict text, actor text)
RETURNS peer.decision
LANGUAGE sql VOLATILE STRICT AS $$
    WITH decided AS (
        UPDATE peer.items AS i
        SET state = 'decided', lease_owner = NULL, lease_token = NULL,
            lease_expires_at = NULL, updated_at = now()
        WHERE i.id = submit_decision.item_id
          AND i.lease_token = submit_decision.lease_token
          AND i.lease_owner = submit_decision.actor
          AND i.state = 'pending'
          AND i.lease_expires_at > now()
        RETURNING i.id, i.queue
    ),
    recorded AS (
        INSERT INTO peer.decisions (item_id, verdict, reviewer, lease_token)
        SELECT d.id, submit_decision.verdict, submit_decision.actor, submit_decision.lease_token
        FROM decided AS d
        RETURNING id, item_id
    )
    SELECT r.id, r.item_id,
           peer.hint(json_strip_nulls(json_build_object(
               'k', 'decided', 'q', d.queue, 'i', r.item_id, 'd', r.id, 'from', d.queue))::text)
    FROM recorded AS r JOIN decided AS d ON d.id = r.item_id
$$;

-- What PostGraphile exposes: the same two functions, the actor taken from the request's
-- verified JWT (`sub`), as PostGraphile passes it (jwt.claims.*). A pooled connection keeps
-- the setting defined but empty after a request, so empty counts as none.
CREATE FUNCTION peer_api.claim_next(queue text) RETURNS peer.claim
LANGUAGE sql VOLATILE STRICT AS $$
    SELECT * FROM peer.claim_next(queue, nullif(current_setting('jwt.claims.sub', true), ''))
$$;

CREATE FUNCTION peer_api.submit_decision(item_id bigint, lease_token uuid, verdict text)
RETURNS peer.decision
LANGUAGE sql VOLATILE STRICT AS $$
    SELECT * FROM peer.submit_decision(item_id, lease_token, verdict,
                                       nullif(current_setting('jwt.claims.sub', true), ''))
$$;

-- PostGraphile without authentication, the upper bound of that peer: the same functions,
-- the actor sent by the client as an argument.
CREATE FUNCTION peer_open.claim_next(queue text, actor text) RETURNS peer.claim
LANGUAGE sql VOLATILE STRICT AS $$
    SELECT * FROM peer.claim_next(queue, actor)
$$;

CREATE FUNCTION peer_open.submit_decision(item_id bigint, lease_token uuid, verdict text,
                                          actor text)
RETURNS peer.decision
LANGUAGE sql VOLATILE STRICT AS $$
    SELECT * FROM peer.submit_decision(item_id, lease_token, verdict, actor)
$$;
