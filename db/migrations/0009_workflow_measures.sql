-- Workflow measures: what an exception owner reads on a dashboard (Workflow.measures).
-- Three additions make the figures computable from the tables:
--   * when each lease on an exception's item began, so an action taken under a lease has a
--     hands-on time (the lease start to the action), kept on the action's event;
--   * the minutes a workflow's operators and approvers can give per day (capacity);
--   * an index that lets every windowed figure read only the window's events.

-- Every lease taken on an exception's item, as it is taken. The claim statement is the
-- review loop's own (it does not know about exceptions), so a trigger records it; review
-- items never reach the trigger function (the WHEN clause is evaluated first).
CREATE TABLE exception_leases (
    lease_token uuid PRIMARY KEY,
    item_id     bigint NOT NULL REFERENCES review_items (id),
    holder      text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION exception_leases_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO exception_leases (lease_token, item_id, holder)
    VALUES (NEW.lease_token, NEW.id, NEW.lease_owner);
    RETURN NULL;
END
$$;

CREATE TRIGGER review_items_exception_lease
    AFTER UPDATE OF lease_token ON review_items
    FOR EACH ROW
    WHEN (NEW.kind = 'exception' AND NEW.lease_token IS NOT NULL
          AND NEW.lease_token IS DISTINCT FROM OLD.lease_token)
    EXECUTE FUNCTION exception_leases_record();

-- For an action taken under a lease (attach evidence, submit, approve or reject a
-- correction, close): when that lease began. NULL for every other event, and for actions
-- under leases taken before this migration.
ALTER TABLE exception_events ADD COLUMN lease_started_at timestamptz;

-- Hands-on minutes per day the workflow's people can give: its operators (the reviewers of
-- its owner queues) and its approvers, apart, since different people supply them.
ALTER TABLE workflows
    ADD COLUMN reviewer_minutes_per_day double precision
        CHECK (reviewer_minutes_per_day >= 0),
    ADD COLUMN approver_minutes_per_day double precision
        CHECK (approver_minutes_per_day >= 0);

-- "The last N seconds" of a workflow's history: a range on this index, whatever the
-- history's length.
CREATE INDEX exception_events_workflow_at ON exception_events (workflow, at);

GRANT SELECT, INSERT ON exception_leases TO casework_app;
