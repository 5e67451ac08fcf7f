-- When a decided item was enqueued, kept on its decision (issue 11's dashboard cost).
--
-- Time to decision (enqueue to verdict) was read per decision from its item by primary key:
-- for a 7-day window of 5,000 decisions, 20,000 buffer reads, most of the cost of
-- queue_measures_summary. The decision copies the item's enqueue time instead, as it
-- copies the lease's start (0008), so the window is read from review_decisions alone.
-- Decisions recorded before this migration keep NULL and are read from their item, as
-- before; no existing row is rewritten.
ALTER TABLE review_decisions ADD COLUMN item_created_at timestamptz;
