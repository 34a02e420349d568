-- Locks the picked jobs still pending; claim_update then claims them.
SELECT UTC_TIMESTAMP(6), id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
FROM sluice_jobs
WHERE id IN (/*IN*/) AND status = 'pending'
FOR UPDATE
