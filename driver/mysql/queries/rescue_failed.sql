UPDATE sluice_jobs FORCE INDEX (sluice_jobs_rescue)
SET status = 'failed', finished_at = UTC_TIMESTAMP(6), next_run_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'),
    locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE status = 'processing' AND locked_until < UTC_TIMESTAMP(6) AND attempts >= max_attempts
ORDER BY locked_until, id
LIMIT ?
