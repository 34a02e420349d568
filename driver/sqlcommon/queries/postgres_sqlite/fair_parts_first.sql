-- A skip scan of sluice_jobs_pending: each step is one index seek to the next
-- partition of the queue with a pending job, so finding n partitions costs
-- n seeks however many jobs each one holds. The partition '' (jobs without
-- a partition) is a partition like any other.
-- Arguments: queue, queue, how many.
WITH RECURSIVE p(pk, n) AS (
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' ORDER BY partition_key LIMIT 1), 1
  UNION ALL
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' AND partition_key > p.pk ORDER BY partition_key LIMIT 1), n + 1
  FROM p WHERE p.pk IS NOT NULL AND n < ?
)
SELECT pk FROM p WHERE pk IS NOT NULL
