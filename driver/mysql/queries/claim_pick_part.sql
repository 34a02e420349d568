-- One partition's first runnable jobs, one branch of a fair claim's UNION
-- ALL; the FILTER marker takes the type conditions.
(SELECT id, type, partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE status = 'pending' AND queue = ? AND partition_key = ? AND next_run_at <= UTC_TIMESTAMP(6)/*FILTER*/
ORDER BY priority, next_run_at, id LIMIT ?)
