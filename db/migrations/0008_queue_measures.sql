-- Queue measures (Queue.measures): what the tables must hold for a manager's figures to be
-- computed from them, over a window, at a cost that follows the window and not the history.
--
-- - When a lease began: the claim stamps it on the item, and a decision copies it with the
--   item's lease count, so hands-on time (lease start to decision) and the lease-count
--   histogram at decision are read from the decision row alone.
-- - How leases end without a decision: `item_events`, the append-only item timeline, starts
--   here with the two endings no other table records (released, lapsed). Only those two
--   paths write to it: the claim+decide cycle adds no row.
-- - Indexes for windowed reads: decisions by decided_at and items by created_at (block range
--   indexes), timeline rows by (queue, kind, at).
-- - The queue setting `reviewer_minutes_per_day`: the hands-on minutes a team has a day.

ALTER TABLE queues
    ADD COLUMN reviewer_minutes_per_day double precision
        CHECK (reviewer_minutes_per_day >= 0 AND reviewer_minutes_per_day <= 10000000);

-- When the item's latest lease began (set by each claim that leases it; kept after the
-- lease ends, so a release can record it).
ALTER TABLE review_items ADD COLUMN lease_started_at timestamptz;

-- The lease a verdict was made under: when it began, and the item's lease_count then.
-- NULL for overturns (made under no lease) and for decisions recorded before this migration.
ALTER TABLE review_decisions
    ADD COLUMN lease_started_at timestamptz,
    ADD COLUMN lease_count integer;

-- BRIN, not btree: rows are written in time order (decisions are append-only, items are
-- inserted at their enqueue), so a block range summary finds a window's rows, and keeping it
-- costs the hot path next to nothing. A btree here would take an entry with every decision
-- and, because a claim or a decision updates its item's indexed lease columns (no HOT
-- update), with every claim and decision on review_items too.
CREATE INDEX review_decisions_decided_brin ON review_decisions USING brin (decided_at);
CREATE INDEX review_items_created_brin ON review_items USING brin (created_at);

-- Append-only, like review_decisions: the application role may only INSERT and SELECT.
-- One row per thing that happened to an item that no other table records.
CREATE TABLE item_events (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id          bigint NOT NULL REFERENCES review_items (id),
    -- The queue the item was in when it happened.
    queue            text NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('released', 'lapsed')),
    -- Who acted; for a lapse, whose lease ran out.
    actor            text NOT NULL,
    -- The actor's role; for a lapse, the role that holds leases in the queue (the claim
    -- that noticed the lapse was made in it).
    actor_role       text NOT NULL,
    -- The lease it happened under, and when that lease began.
    lease_token      uuid,
    lease_started_at timestamptz,
    -- When it happened. A lapse happened when the lease ran out; the claim that notices it
    -- and writes the row may come much later (recorded_at).
    at               timestamptz NOT NULL DEFAULT now(),
    recorded_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX item_events_queue_kind_at ON item_events (queue, kind, at);

GRANT SELECT, INSERT ON item_events TO casework_app;
