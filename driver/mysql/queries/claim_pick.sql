-- The queue's first runnable jobs in its global order, for a claim with
-- limits; the FILTER marker takes the type conditions.
(SELECT id, type, partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_pick)
WHERE status = 'pending' AND queue = ? AND next_run_at <= UTC_TIMESTAMP(6)/*FILTER*/
ORDER BY priority, next_run_at, id LIMIT ?)
