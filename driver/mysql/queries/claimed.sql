SELECT id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
FROM sluice_jobs
WHERE status = 'processing' AND locked_until = ? AND locked_by = ?
ORDER BY priority, next_run_at, id
