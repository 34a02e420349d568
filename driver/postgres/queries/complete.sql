UPDATE sluice_jobs
SET status = $1, attempts = attempts - $2::int,
    next_run_at = CASE WHEN $3::int = 1 THEN next_run_at ELSE now() + $4::bigint * interval '1 microsecond' END,
    finished_at = CASE WHEN $5::int = 1 THEN now() ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE($6, last_error), result = COALESCE($7, result), updated_at = now()
WHERE id = $8 AND locked_by = $9 AND status = 'processing'
