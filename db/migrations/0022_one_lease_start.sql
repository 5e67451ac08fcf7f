-- One record of when a lease began: review_items.lease_started_at, which every claim stamps
-- (migration 0008) and keeps after the lease ends. Migration 0009 added a second record for
-- exceptions' items: a trigger on review_items wrote a row to exception_leases at each claim
-- of one, and each exception action under a lease looked its start up there by token. The
-- actions' fences already hold the item row under that very lease, so they read its
-- lease_started_at now (db/queries/exceptions.sql); the trigger, its function and the table
-- go. Events recorded before keep the start they were given (the same instant: the claim's
-- now() filled both), and a claim no longer runs a trigger.
DROP TRIGGER review_items_exception_lease ON review_items;
DROP FUNCTION exception_leases_record();
DROP TABLE exception_leases;
