-- The queue's first runnable jobs with a partition, in claim order, locked,
-- for the driver to merge with claim.sql's: the range (pending, NULL,
-- queue) of the rescue index (012_pending_indexes.sql).
SELECT UTC_TIMESTAMP(6), id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'pending' AND locked_until IS NULL AND partitioned_queue = ? AND next_run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, next_run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
