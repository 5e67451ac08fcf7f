-- name: health_check
-- `writable`: this connection reaches a server that takes writes. False on a standby (in
-- recovery) and on a server set read-only: a primary's pool that reaches one is not ready.
SELECT 1 AS ok,
       NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable;
