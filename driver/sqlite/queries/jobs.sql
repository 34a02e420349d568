-- Enqueue, read, list, retry, cancel and delete jobs.
-- Also run here, written once for every dialect in
-- driver/internal/sqlcommon/queries/jobs.sql: List, Delete.

-- name: Insert
INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, strftime('%Y-%m-%d %H:%M:%f', 'now', ?)), ?, ?)
ON CONFLICT DO NOTHING
RETURNING id

-- name: KeyHolder
SELECT id FROM sluice_jobs
WHERE business_key = ? AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))

-- name: Get
SELECT /*JOB_COLUMNS*/, history FROM sluice_jobs WHERE id = ?

-- name: ListIDs
-- The ids of a bulk action's selection; sqlcommon adds the filter.
SELECT id FROM sluice_jobs

-- name: ListStatus
-- The listing of one status; sqlcommon adds the status and the filter.
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
UPDATE sluice_jobs
SET status = 'pending', next_run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (/*LIST*/) AND status IN ('failed', 'cancelled')

-- name: RetryIDs
SELECT id FROM sluice_jobs
WHERE status = ? AND (? = '' OR type = ?) AND id > ?
ORDER BY id LIMIT 500

-- name: Cancel
UPDATE sluice_jobs SET status = 'cancelled', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (/*LIST*/) AND status IN ('pending', 'failed')
