UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND END,
    finished_at = CASE WHEN ? = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = UTC_TIMESTAMP(6)
WHERE id = ? AND locked_by = ? AND status = 'processing'
