UPDATE (/*ROWS*/) u STRAIGHT_JOIN sluice_jobs j FORCE INDEX (PRIMARY) ON j.id = u.id AND j.locked_by = u.token
SET j.status = u.status, j.attempts = j.attempts - u.refund,
    j.next_run_at = CASE WHEN u.keep_run_at = 1 THEN j.next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL u.delay_us MICROSECOND END,
    j.finished_at = CASE WHEN u.finish = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    j.locked_by = NULL, j.locked_until = NULL,
    j.last_error = COALESCE(u.error, j.last_error), j.result = COALESCE(u.result, j.result), j.updated_at = UTC_TIMESTAMP(6)
WHERE j.status = 'processing'
