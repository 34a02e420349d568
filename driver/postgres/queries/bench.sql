-- What the benchmark (cmd/sluice bench) runs beyond the driver interface.

-- name: BenchPreload
-- For `sluice bench`: inserts $4 finished jobs of queue $1 and type $2,
-- generated in the database, finished $3 milliseconds ago and earlier, one
-- millisecond apart.
INSERT INTO sluice_jobs (queue, type, dedupe, payload, status, attempts, max_attempts, next_run_at, created_at, updated_at, finished_at)
SELECT $1::text, $2::text, 'permanent', '{}', 'success', 1, 5, t, t, t, t
FROM (SELECT now() - ($3::bigint + g) * interval '1 millisecond' AS t FROM generate_series(1, $4::bigint) g) s

-- name: BenchAnalyze
ANALYZE sluice_jobs

-- name: BenchLatencies
-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT (EXTRACT(EPOCH FROM finished_at - next_run_at) * 1000000)::bigint FROM sluice_jobs WHERE type = $1 AND finished_at IS NOT NULL

-- name: BenchInsert
-- For `sluice bench`: a plain-SQL enqueue, type and payload only, every
-- other column left to the defaults and the insert trigger.
INSERT INTO sluice_jobs (type, payload) VALUES ($1, $2)

-- name: BenchCount
-- For `sluice bench`: the jobs of a type in a status.
SELECT COUNT(*) FROM sluice_jobs WHERE type = $1 AND status = $2
