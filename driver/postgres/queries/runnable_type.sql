SELECT 1 FROM sluice_jobs
WHERE status = 'pending' AND queue = $1 AND type = $2 AND next_run_at <= now()
LIMIT 1
