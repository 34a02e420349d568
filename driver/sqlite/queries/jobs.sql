-- Enqueue, read, list, retry, cancel and delete jobs.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/jobs.sql: List, Delete.

-- name: Insert
-- The deadline is ?12 when given, else ?13 (NULL: none) after the job
-- becomes due, the next_run_at this row gets: strftime with a NULL
-- modifier is NULL. ?14 is the job's own progress timeout in
-- microseconds (NULL: its type's).
INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key, deadline, progress_timeout_us)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, COALESCE(?8, strftime('%Y-%m-%d %H:%M:%f', 'now', ?9)), ?10, ?11,
        COALESCE(?12, strftime('%Y-%m-%d %H:%M:%f', COALESCE(?8, strftime('%Y-%m-%d %H:%M:%f', 'now', ?9)), ?13)), ?14)
ON CONFLICT DO NOTHING
RETURNING id

-- name: KeyHolder
SELECT id FROM sluice_jobs
WHERE business_key = ? AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))

-- name: Get
SELECT /*JOB_COLUMNS*/, history FROM sluice_jobs WHERE id = ?

-- name: ListIDs
-- The ids of a bulk action's selection; sqldriver adds the filter.
SELECT id FROM sluice_jobs

-- name: ListStatus
-- The listing of one status; sqldriver adds the status and the filter.
-- The planner finds the status index by itself (MySQL's needs a hint).
SELECT /*JOB_COLUMNS*/ FROM sluice_jobs

-- name: ListPayload
-- The payload filter of a listing: the value at a dotted path, as text
-- (true and false as words, like the other databases). Every parameter
-- but the last is the path; the last is the value.
COALESCE(CASE json_type(payload, '$."' || replace(?, '.', '"."') || '"') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
         CAST(json_extract(payload, '$."' || replace(?, '.', '"."') || '"') AS TEXT)) = ?

-- name: Exists
SELECT status FROM sluice_jobs WHERE id = ?

-- name: Retry
-- A deadline already passed is dropped: the operator asks for a run now,
-- which the deadline would refuse (a job cancelled by its deadline is
-- retried so). One still ahead is kept.
UPDATE sluice_jobs
SET status = 'pending', next_run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    deadline = CASE WHEN deadline <= strftime('%Y-%m-%d %H:%M:%f', 'now') THEN NULL ELSE deadline END,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (/*LIST*/) AND status IN ('failed', 'cancelled')

-- name: RetryIDs
SELECT id FROM sluice_jobs
WHERE status = ? AND (? = '' OR type = ?) AND id > ?
ORDER BY id LIMIT 500

-- name: Cancel
UPDATE sluice_jobs SET status = 'cancelled', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (/*LIST*/) AND status IN ('pending', 'failed')
