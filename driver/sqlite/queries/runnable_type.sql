SELECT 1 FROM sluice_jobs
WHERE status = 'pending' AND queue = ? AND type = ? AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
LIMIT 1
