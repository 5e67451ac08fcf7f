-- Claim controls (issue 14, sections 3 to 5): what a manager, a reviewer and a queue's
-- settings can do to the order in which items are handed out.
--
--   - Assignment: an item reserved for one named reviewer until a time (or until it is
--     unassigned); only that reviewer's claim returns it, before anything else.
--   - Capacity: a per-queue limit on the live leases one reviewer holds.
--   - Holds: an item parked until a time, with a reason from the queue's catalogue.
--   - Due times: when an item is due, per queue and priority or set at enqueue, and the
--     queue overdue items move to.
--
-- Every one of them is evaluated at claim time: no sweeper job has to run for an assignment
-- or a hold to end, or for an overdue item to move.

-- A queue's settings. NULL limits and due times mean "none".
ALTER TABLE queues
    -- The live leases one reviewer may hold in this queue at once.
    ADD COLUMN max_leases_per_reviewer integer
        CHECK (max_leases_per_reviewer BETWEEN 1 AND 1000),
    -- Seconds from enqueue to an item's due time...
    ADD COLUMN due_seconds integer CHECK (due_seconds BETWEEN 1 AND 31622400),
    -- ...or, by priority, `[{"min_priority": p, "due_seconds": s}, ...]`: an item takes the
    -- entry with the highest min_priority at or below its priority (review_due_seconds).
    ADD COLUMN due_seconds_by_priority jsonb NOT NULL DEFAULT '[]'
        CHECK (jsonb_typeof(due_seconds_by_priority) = 'array'),
    -- Whether a hold stops the clock: the held time is added to the item's due time.
    ADD COLUMN hold_pauses_due boolean NOT NULL DEFAULT false,
    -- Where overdue items move at claim time, and how much their priority rises.
    ADD COLUMN overdue_queue text REFERENCES queues (name),
    ADD COLUMN overdue_priority_boost integer NOT NULL DEFAULT 100
        CHECK (overdue_priority_boost BETWEEN 0 AND 1000000);

-- The closed catalogue of reasons an item may be held for, per queue (like reason_codes).
CREATE TABLE hold_reasons (
    queue      text NOT NULL REFERENCES queues (name),
    code       text NOT NULL CHECK (code ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    label      text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, code)
);

ALTER TABLE review_items
    -- The reviewer the item is reserved for, and until when (NULL: until unassigned).
    ADD COLUMN assigned_to text CHECK (length(assigned_to) BETWEEN 1 AND 200),
    ADD COLUMN assigned_until timestamptz,
    -- Parked until this time, for a reason of the queue's catalogue. A hold ends the lease.
    ADD COLUMN held_until timestamptz,
    ADD COLUMN hold_reason text,
    -- The hold moved due_at on by its whole length (the queue's hold_pauses_due): resuming
    -- early gives back what was not used.
    ADD COLUMN hold_paused_due boolean NOT NULL DEFAULT false,
    ADD COLUMN due_at timestamptz,
    -- Set aside from the general claim order: held, or reserved for someone. The claim
    -- index leads with it, so a claim never walks past items that are not for everyone.
    ADD COLUMN reserved boolean NOT NULL
        GENERATED ALWAYS AS (held_until IS NOT NULL OR assigned_to IS NOT NULL) STORED,
    -- When the first of the item's hold and assignment ends: a claim that finds one in the
    -- past clears it first (items_end_reservations).
    ADD COLUMN reserved_until timestamptz
        GENERATED ALWAYS AS (least(held_until, assigned_until)) STORED,
    ADD CONSTRAINT review_items_assignment_names_reviewer
        CHECK (assigned_until IS NULL OR assigned_to IS NOT NULL),
    ADD CONSTRAINT review_items_hold_has_reason
        CHECK ((held_until IS NULL) = (hold_reason IS NULL)),
    ADD CONSTRAINT review_items_held_item_is_unleased
        CHECK (held_until IS NULL OR lease_token IS NULL),
    ADD CONSTRAINT review_items_hold_reason_in_catalogue
        FOREIGN KEY (queue, hold_reason) REFERENCES hold_reasons (queue, code);

-- The claim index, led by `reserved`: the general claim reads `reserved = false` and walks
-- items in priority order without passing any held or assigned item. Readers of the whole
-- backlog (stats, measures) still find every pending item of a queue under its first column.
DROP INDEX review_items_claimable;
CREATE INDEX review_items_claimable
    ON review_items (queue, reserved, priority DESC, created_at)
    WHERE state = 'pending';

-- An assignee's own items, in claim order: the claim looks here first.
CREATE INDEX review_items_assigned
    ON review_items (queue, assigned_to, priority DESC, created_at)
    WHERE state = 'pending' AND assigned_to IS NOT NULL;

-- Holds and assignments by the time they end: the claim's probe for ones that have ended.
CREATE INDEX review_items_reservation_end
    ON review_items (queue, reserved_until)
    WHERE state = 'pending' AND reserved_until IS NOT NULL;

-- Waiting items by due time: the timer's next OVERDUE, and the claim's probe for overdue
-- items to move.
CREATE INDEX review_items_due
    ON review_items (queue, due_at)
    WHERE state = 'pending' AND due_at IS NOT NULL;

-- One holder's leases (the lease limit's count, Query.me's list) are read through
-- review_items_lease_expiry, the queue's live leases, and filtered by holder: a queue has
-- as many of those as it has people at work. An index of its own would take an entry on
-- every claim (measured: one more WAL record and about 0.1 ms of the claim statement).

-- The due time an item of this priority gets in this queue, in seconds; NULL: none.
CREATE FUNCTION review_due_seconds(q queues, priority integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(
        (SELECT (e ->> 'due_seconds')::integer
         FROM jsonb_array_elements(q.due_seconds_by_priority) AS e
         WHERE (e ->> 'min_priority')::integer <= priority
         ORDER BY (e ->> 'min_priority')::integer DESC
         LIMIT 1),
        q.due_seconds)
$$;

-- The live leases `holder` has in `for_queue`, counted after taking a transaction-scoped
-- advisory lock on the pair, so that a reviewer's concurrent claims in a limited queue
-- are counted one after the other.
--
-- Why a function: under READ COMMITTED a statement reads one snapshot, taken before it
-- starts, so a lock taken inside it would not make the count see a claim that committed
-- while it waited. A VOLATILE function takes a fresh snapshot for each query it runs: the
-- count below is read after the lock is granted, that is after the concurrent claim that
-- held it committed (an advisory lock is released at commit). The claim calls it only for
-- a queue with a limit; its lock is held until the claim commits.
CREATE FUNCTION casework_live_leases(for_queue text, holder text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    held bigint;
BEGIN
    -- The two-key form: a keyspace apart from the one-key locks (migrations use those).
    PERFORM pg_advisory_xact_lock(hashtext(for_queue), hashtext(holder));
    SELECT count(*) INTO held
    FROM review_items AS i
    WHERE i.lease_owner = holder
      AND i.queue = for_queue
      AND i.state = 'pending'
      AND i.lease_token IS NOT NULL
      AND i.lease_expires_at > now();
    RETURN held;
END
$$;

REVOKE ALL ON FUNCTION review_due_seconds(queues, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION review_due_seconds(queues, integer) TO casework_app;
REVOKE ALL ON FUNCTION casework_live_leases(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_live_leases(text, text) TO casework_app;

GRANT SELECT, INSERT, UPDATE ON hold_reasons TO casework_app;
