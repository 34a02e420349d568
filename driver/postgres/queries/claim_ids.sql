UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = ?,
    locked_until = clock_timestamp() + ?::bigint * interval '1 microsecond', updated_at = now()
WHERE id IN (/*IN*/) AND status = 'pending'
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
