-- What the benchmark (cmd/sluice bench) runs beyond the driver interface.

-- name: BenchPreload
-- For `sluice bench`: inserts ?4 finished jobs of queue ?1 and type ?2,
-- generated in the database, finished ?3 milliseconds ago and earlier, one
-- millisecond apart.
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?4)
INSERT INTO sluice_jobs (queue, type, dedupe, payload, status, attempts, max_attempts, next_run_at, created_at, updated_at, finished_at)
SELECT ?1, ?2, 'permanent', '{}', 'success', 1, 5, t, t, t, t
FROM (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ((?3 + n) / 1000.0) || ' seconds') AS t FROM g)

-- name: BenchAnalyze
ANALYZE sluice_jobs

-- name: BenchLatencies
-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT CAST((julianday(finished_at) - julianday(next_run_at)) * 86400000000 AS INTEGER) FROM sluice_jobs WHERE type = ? AND finished_at IS NOT NULL

-- name: BenchInsert
-- For `sluice bench`: a plain-SQL enqueue, type and payload only, every
-- other column left to the defaults and the insert trigger.
INSERT INTO sluice_jobs (type, payload) VALUES (?, ?)

-- name: BenchCount
-- For `sluice bench`: the jobs of a type in a status.
SELECT COUNT(*) FROM sluice_jobs WHERE type = ? AND status = ?
