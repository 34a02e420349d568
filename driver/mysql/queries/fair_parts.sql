-- The next partitions of the queue with a pending job after the last one
-- served: a loose index scan of sluice_jobs_fair ("Using index for
-- group-by"), one seek per partition however many jobs each one holds.
-- A recursive skip scan, as on the other databases, reads MariaDB's
-- dependent subquery by its (queue, status) prefix only.
-- Arguments: queue, the last partition served, queue (again), how many.
SELECT partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND partition_key > ? AND queue = ?
GROUP BY partition_key
ORDER BY partition_key
LIMIT ?
