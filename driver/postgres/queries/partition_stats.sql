-- The partitions of a queue with the largest backlog, for stats and the
-- dashboard: pending jobs per partition from an index-only range of
-- sluice_jobs_pending in partition order, running ones from the rescue
-- index (the running jobs, whose number the cluster's concurrency bounds).
-- arg holds the one queue argument both reads use.
WITH arg AS (SELECT ?::text AS queue),
waiting AS (
  SELECT partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'pending' AND queue = (SELECT queue FROM arg) AND partition_key > ''
  GROUP BY partition_key),
held AS (
  SELECT partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'processing' AND queue = (SELECT queue FROM arg) AND partition_key <> ''
  GROUP BY partition_key)
SELECT partition_key, COALESCE(waiting.n, 0) AS pending, COALESCE(held.n, 0) AS running
FROM waiting FULL JOIN held USING (partition_key)
ORDER BY pending DESC, partition_key
LIMIT ?
