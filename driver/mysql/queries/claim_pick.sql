-- The queue's first runnable jobs in its global order, for a claim with
-- limits: the merge of its jobs without a partition (the partition '' of
-- sluice_jobs_fair) and those with one (the rescue index's pending slice),
-- each branch at most n rows of its index in claim order. Each FILTER
-- marker takes the type conditions of its branch.
SELECT id, type, partition_key FROM (
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
  WHERE queue = ? AND status = 'pending' AND partition_key = '' AND next_run_at <= UTC_TIMESTAMP(6)/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
  UNION ALL
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
  WHERE status = 'pending' AND locked_until IS NULL AND partitioned_queue = ? AND next_run_at <= UTC_TIMESTAMP(6)/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
) pending
ORDER BY priority, next_run_at, id
LIMIT ?
