UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', ?) END,
    finished_at = CASE WHEN ? = 1 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = ? AND locked_by = ? AND status = 'processing'
