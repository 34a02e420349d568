-- The partitions with the largest backlog, the first N of every queue, for
-- stats and the dashboard in one read however many queues there are: an
-- index-only read of sluice_jobs_fair, whose (status, queue,
-- partition_key) prefix holds the pending and running jobs. (The drivers
-- with partial indexes read two smaller ones instead.)
SELECT queue, partition_key, pending, running FROM (
  SELECT queue, partition_key, pending, running,
         ROW_NUMBER() OVER (PARTITION BY queue ORDER BY pending DESC, partition_key) AS pos
  FROM (
    SELECT queue, partition_key,
           SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
           SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END) AS running
    FROM sluice_jobs
    WHERE status IN ('pending', 'processing') AND partition_key <> ''
    GROUP BY queue, partition_key) parts) ranked
WHERE pos <= ?
ORDER BY queue, pos
