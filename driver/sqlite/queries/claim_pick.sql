-- The queue's first runnable jobs in its global order, for a claim with
-- limits: the merge claim.sql makes of the jobs without a partition and
-- those with one, each branch at most n rows of its index in claim order.
-- Each FILTER marker takes the type conditions of its branch.
SELECT id, type, partition_key FROM (
  SELECT * FROM (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs
  WHERE status = 'pending' AND queue = ? AND partition_key = '' AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
  UNION ALL
  SELECT * FROM (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs
  WHERE status = 'pending' AND length(partition_key) > 0 AND queue = ? AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?))
ORDER BY priority, next_run_at, id
LIMIT ?
