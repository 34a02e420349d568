-- The next partitions of the queue with a pending job after the last one
-- served: an index-only range of sluice_jobs_fair in partition order that
-- stops after n partitions. It reads the entries of the partitions it
-- passes (MariaDB makes it a loose index scan, one seek per partition,
-- only when its statistics show many rows per partition). A recursive
-- skip scan, as on the other databases, was slower: MariaDB reads the
-- dependent subquery by its (queue, status) prefix and filters the rest.
-- Arguments: queue, the last partition served, queue (again), how many.
SELECT partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND partition_key > ? AND queue = ?
GROUP BY partition_key
ORDER BY partition_key
LIMIT ?
