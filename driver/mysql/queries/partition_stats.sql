-- The partitions of a queue with the largest backlog, for stats and the
-- dashboard: an index-only read of sluice_jobs_fair, whose (status, queue,
-- partition_key) prefix holds the queue's pending and running jobs. (The
-- drivers with partial indexes read two smaller ones instead.)
SELECT partition_key,
       SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
       SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END) AS running
FROM sluice_jobs
WHERE queue = ? AND status IN ('pending', 'processing') AND partition_key <> ''
GROUP BY partition_key
ORDER BY pending DESC, partition_key
LIMIT ?
