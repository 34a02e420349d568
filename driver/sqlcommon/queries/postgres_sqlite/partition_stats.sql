-- The partitions with the largest backlog, the first N of every queue, for
-- stats and the dashboard in one read however many queues there are:
-- pending jobs per partition from an index-only scan of
-- sluice_jobs_pending in (queue, partition) order, running ones from the
-- rescue index (the running jobs, whose number the cluster's concurrency
-- bounds). Only live rows are read.
WITH waiting AS (
  SELECT queue, partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'pending' AND partition_key > ''
  GROUP BY queue, partition_key),
held AS (
  SELECT queue, partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'processing' AND partition_key <> ''
  GROUP BY queue, partition_key),
ranked AS (
  SELECT queue, partition_key, COALESCE(waiting.n, 0) AS pending, COALESCE(held.n, 0) AS running,
         row_number() OVER (PARTITION BY queue ORDER BY COALESCE(waiting.n, 0) DESC, partition_key) AS pos
  FROM waiting FULL JOIN held USING (queue, partition_key))
SELECT queue, partition_key, pending, running FROM ranked
WHERE pos <= ?
ORDER BY queue, pos
