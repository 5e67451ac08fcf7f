-- Observability: what /metrics and traces need from the database.

-- A decision's handling time (its lease's start to its verdict) comes from
-- review_decisions.lease_started_at, which migration 0008 added for the queue measures.

-- The W3C traceparent of the request that recorded a decision (NULL when tracing is off),
-- so that the worker's effect attempts can link their spans to it.
ALTER TABLE review_decisions ADD COLUMN traceparent text CHECK (length(traceparent) <= 100);

-- The database figures of /metrics, computed by at most one scrape every few seconds and
-- read by every other scrape of every process meanwhile: one row, replaced in place.
CREATE TABLE metrics_figures (
    id          smallint PRIMARY KEY CHECK (id = 1),
    computed_at timestamptz NOT NULL,
    figures     jsonb NOT NULL
);

-- Open exceptions by workflow and reason, counted without reading closed ones (history).
CREATE INDEX exceptions_open
    ON exceptions (workflow, reason_code)
    WHERE state <> 'closed';

-- Failed applications are counted from decision_applications_queue_pending already.

GRANT SELECT, INSERT, UPDATE ON metrics_figures TO casework_app;
