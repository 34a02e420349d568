UPDATE sluice_jobs FORCE INDEX (sluice_jobs_pick) SET status = 'processing', attempts = attempts + 1, locked_by = ?, locked_until = ?, updated_at = ?
WHERE status = 'pending' AND queue = ? AND next_run_at <= ?
ORDER BY priority, next_run_at, id
LIMIT ?
