-- The listing of one status; sqlcommon adds the status and the filter.
-- Without the hint MariaDB reads sluice_jobs_status_id by status alone
-- ('ref' access) and checks a page's "id < ?" on each full row it fetches:
-- a deep page of failed jobs among a million read every failed row newer
-- than the page (50,000 rows, 100 ms and more). Forced, the index is read
-- as a range over (status, id) that starts at the page and stops at the
-- LIMIT.
SELECT id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)
