-- The item timeline (issue 14): `item_events` grows from the two lease endings of 0008 to
-- every kind of thing that happens to a review item.
--
-- What another append-only record already holds is not written twice, so that the
-- claim+decide cycle, the hot path, adds no row:
--   - a claim is read from the record of how its lease ended (the decision, release, lapse
--     or revocation made under it carries the lease's token, owner and start) or, for the
--     lease held now, from the item;
--   - decisions, escalations by verdict and overturns are read from review_decisions.
-- Every other kind is written here, in the same statement as the change it records.

ALTER TABLE item_events DROP CONSTRAINT item_events_kind_check;
ALTER TABLE item_events ADD CONSTRAINT item_events_kind CHECK (kind IN (
    'enqueued',     -- first enqueue of the external key
    'reuploaded',   -- the same key enqueued again with different evidence
    'renewed',      -- the lease was extended by its holder
    'released',     -- the holder gave the item back
    'lapsed',       -- the lease ran out (written by the claim that noticed it)
    'revoked',      -- a manager ended someone else's lease
    'escalated',    -- moved to the escalation queue without a verdict (abandons, overdue)
    'moved',        -- moved to another queue by a manager
    'held',         -- parked until a time, with a reason from the queue's catalogue
    'resumed',      -- a hold ended early
    'assigned',     -- reserved for one named reviewer
    'unassigned',   -- the reservation ended early
    'noted'         -- a note was added
));

-- Text a person wrote: a note's body, or the reason given for a revocation.
ALTER TABLE item_events ADD COLUMN body text CHECK (length(body) <= 10000);

-- What is particular to the kind, as a small object: the evidence hash of an enqueue or a
-- re-upload; the queues of an escalation or a move; a hold's reason code and end; an
-- assignee and the end of the assignment; whose lease a revocation ended.
ALTER TABLE item_events ADD COLUMN detail jsonb CHECK (jsonb_typeof(detail) = 'object');

-- One item's story in order: ReviewItem.events reads this index.
CREATE INDEX item_events_item ON item_events (item_id, id);
