-- Live updates: a commit-ordered position for the decision stream, and an index for the
-- per-process lease-expiry timer.

-- Decision ids are handed out at insert time, but transactions commit in another order, so
-- "every id above the last one seen" can skip a row that commits late. The inserting
-- transaction's id gives a safe order: once every transaction below a horizon has ended
-- (pg_snapshot_xmin), no row below it can still appear.
ALTER TABLE review_decisions
    ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE INDEX review_decisions_queue_position ON review_decisions (queue, txid, id);

CREATE INDEX review_items_lease_expiry
    ON review_items (queue, lease_expires_at)
    WHERE state = 'pending' AND lease_token IS NOT NULL;
