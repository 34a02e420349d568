-- One partition's first runnable jobs, one branch of a fair claim's UNION
-- ALL: a range of sluice_jobs_pending, whose partition '' (jobs without a
-- partition) takes its turn like any other. The FILTER marker takes the
-- type conditions.
SELECT * FROM (SELECT id, type, partition_key FROM sluice_jobs
WHERE status = 'pending' AND queue = ? AND partition_key = ? AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')/*FILTER*/
ORDER BY priority, next_run_at, id LIMIT ?)
