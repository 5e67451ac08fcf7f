"""The statements of db/queries/applications.sql, as symbols.

Generated from db/queries/applications.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/applications.sql:1
APPLICATIONS_CLAIM = Query("applications_claim", lambda *, batch_size, worker_id, worker, lease_seconds: None)
"""Takes up to :batch_size due applications for one attempt each, under a lock that lapses
if the worker dies, long enough for the queue's effect timeout; sooner, once the worker
(:worker_id) stops renewing its liveness (apply_worker_renew). Returns what the effect needs,
including the outcome an overturn reverses. Only effective decisions are ever on this
list: decision_submit enlists a provisional one only once decision_confirm confirms it.
The note of a decision on an item under a privacy policy is not sent (null): it is
personal data, stored sealed (server/domain/privacy/records.py), and a receiver is an
integration, not a reader the policy shows it to.
Signing (migration 0032): the queue's current secret, the rotated-out ones still in their
overlap (newest first), and whether the legacy headers go too.
"""

# db/queries/applications.sql:65
APPLICATION_RECORD_APPLIED = Query("application_record_applied", lambda *, decision_id, note, attempt, worker, started_at: None)
"""The proof of application, once per decision: a second recording of the same decision
(a lapsed lock, a concurrent worker) changes nothing and returns applied = false.
"""

# db/queries/applications.sql:89
APPLICATIONS_RECORD_APPLIED = Query("applications_record_applied", lambda *, decision_ids, notes, attempts, started_ats, worker: None)
"""application_record_applied for a batch: the attempts of one worker (:worker) that ended
in a 2xx while its previous recording ran, in one statement instead of one each. Each
element is (:decision_ids[n], :notes[n], :attempts[n], :started_ats[n]); a decision is
in a batch at most once. The same guards as one by one: the proof is inserted once per
decision (a second recording of it, by whichever worker, changes nothing and says
applied = false), and an attempt row is written only for a decision on the work list.
Rows are taken in decision id order, so two batches that overlap (a takeover) lock alike.
"""

# db/queries/applications.sql:131
APPLICATION_RECORD_FAILURE = Query("application_record_failure", lambda *, permanent, next_attempt_at, error, decision_id, attempt, worker, started_at: None)
"""A failed attempt: retried at :next_attempt_at unless it was permanent or the last one
allowed (counted from the latest redrive), in which case the application is `failed` and
a person gets an exception to own.
Fence: the work list changes only if this is still the latest attempt (:attempt) of a
pending application (an attempt that outlived its lock must not undo the one that took
over); the history row is written either way.
The error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
"""

# db/queries/applications.sql:166
APPLICATIONS_GET_BY_DECISION_IDS = Query("applications_get_by_decision_ids", lambda *, decision_ids: None)

# db/queries/applications.sql:172
APPLICATION_ATTEMPTS_GET_BY_DECISION_IDS = Query("application_attempts_get_by_decision_ids", lambda *, decision_ids: None)

# db/queries/applications.sql:178
APPLICATIONS_GET_QUEUE_LAG = Query("applications_get_queue_lag", lambda *, queues, threshold_seconds: None)
""""A human decided and the system did not carry it out", for each queue of :queues:
unapplied decisions older than the threshold, the age of the oldest, and the failed ones.
"""

# db/queries/applications.sql:195
APPLY_WORKER_RENEW = Query("apply_worker_renew", lambda *, worker_id, worker, lease_seconds: None)
"""A worker's liveness, renewed every few seconds while it runs; rows of workers long gone
are cleared on the way (their claims, if any, are takeable either way).
"""

# db/queries/applications.sql:206
APPLY_WORKER_LEAVE = Query("apply_worker_leave", lambda *, worker_id: None)
"""A worker that stopped: whatever it abandoned (cancelled, never recorded) is takeable now."""
