-- Any partition's: a range of sluice_jobs_fair's (queue, status) prefix.
SELECT 1 FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND next_run_at <= UTC_TIMESTAMP(6)
LIMIT 1
