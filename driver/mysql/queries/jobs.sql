-- Enqueue, read, list, retry, cancel and delete jobs.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/jobs.sql: List, Delete.

-- name: Insert
-- The deadline is the 12th argument when given, else the 15th (NULL:
-- none) after the job becomes due: the 13th and 14th repeat run_at and
-- delay, as MySQL has no numbered parameters. The 16th is the job's own
-- progress timeout in microseconds (NULL: its type's).
INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key, deadline, progress_timeout_us)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND), ?, ?,
        COALESCE(?, COALESCE(?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND) + INTERVAL ? MICROSECOND), ?)

-- name: KeyHolders
SELECT business_key, id FROM sluice_jobs WHERE key_active IN (/*LIST*/)

-- name: KeyHolderLocked
SELECT id FROM sluice_jobs WHERE key_active = ? LOCK IN SHARE MODE

-- name: Get
SELECT /*JOB_COLUMNS*/, history FROM sluice_jobs WHERE id = ?

-- name: ListIDs
-- The ids of a bulk action's selection; sqldriver adds one status and the
-- filter. The status index walked newest first stops at the LIMIT; with a
-- type filter MariaDB would otherwise sort every row of the status.
SELECT id FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)

-- name: ListStatus
-- The listing of one status; sqldriver adds the status and the filter.
-- Without the hint MariaDB reads sluice_jobs_status_id by status alone
-- ('ref' access) and checks a page's "id < ?" on each full row it fetches:
-- a deep page of failed jobs among a million read every failed row newer
-- than the page (50,000 rows, 100 ms and more). Forced, the index is read
-- as a range over (status, id) that starts at the page and stops at the
-- LIMIT.
SELECT /*JOB_COLUMNS*/ FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)

-- name: ListPayload
-- The payload filter of a listing: the value at a dotted path, as text.
-- Every parameter but the last is the path; the last is the value.
JSON_UNQUOTE(JSON_EXTRACT(payload, CONCAT('$."', REPLACE(?, '.', '"."'), '"'))) = ?

-- name: Exists
SELECT status FROM sluice_jobs WHERE id = ?

-- name: Retry
-- A deadline already passed is dropped: the operator asks for a run now,
-- which the deadline would refuse (a job cancelled by its deadline is
-- retried so). One still ahead is kept.
UPDATE sluice_jobs
SET status = 'pending', next_run_at = UTC_TIMESTAMP(6), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    deadline = CASE WHEN deadline <= UTC_TIMESTAMP(6) THEN NULL ELSE deadline END,
    updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*LIST*/) AND status IN ('failed', 'cancelled')

-- name: RetryIDs
SELECT id FROM sluice_jobs
WHERE status = ? AND (? = '' OR type = ?) AND id > ?
ORDER BY id LIMIT 500

-- name: Cancel
UPDATE sluice_jobs SET status = 'cancelled', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*LIST*/) AND status IN ('pending', 'failed')
