-- The queue's first runnable jobs in its global order, for a claim with
-- limits; the FILTER marker takes the type conditions.
(SELECT id, type, partition_key FROM sluice_jobs
WHERE status = 'pending' AND queue = ? AND next_run_at <= now()/*FILTER*/
ORDER BY priority, next_run_at, id LIMIT ?)
