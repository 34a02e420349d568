UPDATE sluice_jobs
SET status = 'pending', next_run_at = now(), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    updated_at = now()
WHERE id IN (/*IDS*/) AND status IN ('failed', 'cancelled')
