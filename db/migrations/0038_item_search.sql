-- Item search across queues (issue 30): the indexes that let each filter drive a search
-- when it is the selective one, so one page reads a bounded number of rows.
--
-- review_items rows are rewritten by every claim and decision (never a HOT update: the
-- claim's own indexes change), and each index of the table costs each of those writes one
-- more entry. So the table gets only what no other index can give: the activity order a
-- queue's search walks, and the external key in byte order (prefix search). The rest are
-- partial, written only for the few rows they hold. Filters about decisions and notes are
-- served from the append-only tables, which pay once per decision, never per claim.

-- A queue's items in activity order: the search's own order, so a search whose filters
-- match often stops as soon as its page is full.
CREATE INDEX review_items_activity ON review_items (queue, updated_at, id);

-- A key prefix is a range in byte order, whatever the database's collation.
CREATE INDEX review_items_key_prefix ON review_items ((external_key COLLATE "C"));

-- Items on hold now, or with a hold not yet cleared by a claim.
CREATE INDEX review_items_held ON review_items (held_until)
    WHERE state = 'pending' AND held_until IS NOT NULL;

CREATE INDEX review_items_parked ON review_items (queue, updated_at) WHERE state = 'parked';

-- An item's current decision is the latest of its decisions (nothing supersedes the
-- latest); these find the decisions, review_decisions_item tells whether each is current.
CREATE INDEX review_decisions_reviewer ON review_decisions (reviewer, decided_at);
-- A verdict is found through the reason codes that may give it (no index of its own).
CREATE INDEX review_decisions_reason ON review_decisions (reason_code, decided_at);
CREATE INDEX review_decisions_provisional ON review_decisions (decided_at) WHERE provisional;
