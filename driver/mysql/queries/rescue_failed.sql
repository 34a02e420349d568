UPDATE sluice_jobs
SET status = 'failed', finished_at = UTC_TIMESTAMP(6), next_run_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'),
    locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*IDS*/) AND status = 'processing'
