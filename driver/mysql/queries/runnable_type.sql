SELECT 1 FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND type = ? AND next_run_at <= UTC_TIMESTAMP(6)
LIMIT 1
