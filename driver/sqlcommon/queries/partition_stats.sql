-- The partitions of a queue with the largest backlog, for stats and the
-- dashboard: an index-only range of sluice_jobs_fair over the queue's live
-- rows (the status IN term also lets SQLite use that partial index).
SELECT partition_key,
       SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
       SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END) AS running
FROM sluice_jobs
WHERE queue = ? AND status IN ('pending', 'processing') AND partition_key <> ''
GROUP BY partition_key
ORDER BY pending DESC, partition_key
LIMIT ?
