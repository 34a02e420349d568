-- What the benchmark (cmd/sluice bench) runs beyond the driver interface.

-- name: BenchPreload
-- For `sluice bench`: inserts (the 4th argument) finished jobs of a queue and
-- type (the 1st and 2nd), generated in the database, finished (the 3rd)
-- milliseconds ago and earlier, one millisecond apart. MySQL has no
-- generate_series and caps recursive CTEs at 1,000 levels by default, so
-- rows come from a cross join of digits (up to 100,000 per statement).
INSERT INTO sluice_jobs (queue, type, dedupe, payload, status, attempts, max_attempts, next_run_at, created_at, updated_at, finished_at)
SELECT ?, ?, 'permanent', '{}', 'success', 1, 5, t, t, t, t FROM (
  SELECT UTC_TIMESTAMP(6) - INTERVAL ((? + a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n) * 1000) MICROSECOND AS t
  FROM (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
        UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a
  CROSS JOIN (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
        UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b
  CROSS JOIN (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
        UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c
  CROSS JOIN (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
        UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) d
  CROSS JOIN (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
        UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) e
  LIMIT ?) s

-- name: BenchAnalyze
ANALYZE TABLE sluice_jobs

-- name: BenchLatencies
-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT TIMESTAMPDIFF(MICROSECOND, next_run_at, finished_at) FROM sluice_jobs WHERE type = ? AND finished_at IS NOT NULL

-- name: BenchInsert
-- For `sluice bench`: a plain-SQL enqueue, type and payload only, every
-- other column left to the defaults and the insert trigger.
INSERT INTO sluice_jobs (type, payload) VALUES (?, ?)

-- name: BenchCount
-- For `sluice bench`: the jobs of a type in a status.
SELECT COUNT(*) FROM sluice_jobs WHERE type = ? AND status = ?
