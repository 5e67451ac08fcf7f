-- `casework intake` (server/intake/core.py): the record of each dead letter it took, written
-- in the transaction of the exception it raised (or the item it enqueued), keyed by the
-- source's name and the broker's message id (migration 0035). A key already here means the
-- message was taken before and only its acknowledgement was lost: it is acknowledged again,
-- nothing is raised.

-- name: intake_message_get
-- The record of one dead letter, if it was taken already.
SELECT m.source, m.message_id, m.exception_id, m.item_id
FROM intake_messages AS m
WHERE m.source = :source AND m.message_id = :message_id;

-- name: intake_message_insert
-- Records a dead letter with what it became (an exception or an item). No row back: another
-- intake took the same message in a transaction that committed first (it waited for that
-- one here), so this transaction must be rolled back and the message acknowledged as a
-- repeat.
INSERT INTO intake_messages (source, message_id, broker, exception_id, item_id, origin, body,
                             headers, failure)
VALUES (:source, :message_id, :broker, :exception_id, :item_id, :origin::jsonb, :body::bytea,
        :headers::jsonb, :failure::jsonb)
ON CONFLICT (source, message_id) DO NOTHING
RETURNING source, message_id;
