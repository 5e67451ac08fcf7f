-- name: health_check
SELECT 1 AS ok;
