-- fair_parts from the first partition of the queue.
-- Arguments: queue, queue (again), how many.
SELECT partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND queue = ?
GROUP BY partition_key
ORDER BY partition_key
LIMIT ?
