UPDATE sluice_jobs
SET status = 'pending', next_run_at = UTC_TIMESTAMP(6), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*IDS*/) AND status IN ('failed', 'cancelled')
