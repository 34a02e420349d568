-- The listing of one status; sqlcommon adds the status and the filter.
-- The planner finds the status index by itself (MySQL's needs a hint).
SELECT id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key FROM sluice_jobs
