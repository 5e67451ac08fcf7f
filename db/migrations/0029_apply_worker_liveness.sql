-- Apply workers say they are alive (issue 26): a worker's claim on an application names the
-- worker, and each worker renews a row of its own every few seconds. A claim whose worker has
-- stopped renewing may be taken over at once, instead of waiting out the lock (twice the
-- queue's effect timeout plus ten seconds), which stays the bound for a claim whose worker
-- left no liveness row.
--
-- A row, not a session advisory lock: it works through a transaction pooler, survives a
-- failover with the rest of the data, and an operator can read it.

CREATE TABLE apply_workers (
    -- One run of one worker: a worker that lost its liveness comes back under a new id.
    id          uuid PRIMARY KEY,
    -- host:pid, as in apply_attempts.worker.
    name        text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    -- Renewed by the worker; past it, the worker's claims may be taken over.
    alive_until timestamptz NOT NULL
);

ALTER TABLE decision_applications
    -- The worker run (apply_workers.id) whose claim locked_until is; null for a claim made
    -- before this migration, which keeps its lock until locked_until.
    ADD COLUMN locked_by uuid;

GRANT SELECT, INSERT, UPDATE, DELETE ON apply_workers TO casework_app;
