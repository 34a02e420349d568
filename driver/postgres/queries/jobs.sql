-- Enqueue, read, list, retry, cancel and delete jobs.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/jobs.sql: List, Delete.

-- name: Insert
-- Rows are inserted in input order, so the identity gives keyless rows
-- ascending ids in that order. A row whose key is taken is skipped, also
-- when an earlier row of the same batch took it.
INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key, deadline, progress_timeout_us)
SELECT u.queue, u.type, u.business_key, u.dedupe, u.payload::jsonb, u.priority, u.max_attempts,
       COALESCE(u.run_at, now() + u.delay_us * interval '1 microsecond'), u.traceparent, u.partition_key,
       COALESCE(u.deadline, COALESCE(u.run_at, now() + u.delay_us * interval '1 microsecond') + u.deadline_after_us * interval '1 microsecond'),
       u.progress_timeout_us
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::timestamptz[], $9::bigint[], $10::text[], $11::text[],
            $12::timestamptz[], $13::bigint[], $14::bigint[])
  WITH ORDINALITY AS u(queue, type, business_key, dedupe, payload, priority, max_attempts, run_at, delay_us, traceparent, partition_key,
                       deadline, deadline_after_us, progress_timeout_us, ord)
ORDER BY u.ord
ON CONFLICT DO NOTHING
RETURNING id, business_key

-- name: KeyHolder
SELECT business_key, id FROM sluice_jobs
WHERE business_key = ANY($1::text[]) AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))

-- name: Get
SELECT /*JOB_COLUMNS*/, history FROM sluice_jobs WHERE id = $1

-- name: ListIDs
-- The ids of a bulk action's selection; sqldriver adds the filter.
SELECT id FROM sluice_jobs

-- name: ListStatus
-- The listing of one status; sqldriver adds the status and the filter.
-- The planner finds the status index by itself (MySQL's needs a hint).
SELECT /*JOB_COLUMNS*/ FROM sluice_jobs

-- name: ListPayload
-- The payload filter of a listing: the value at a dotted path, as text.
-- Every parameter but the last is the path; the last is the value.
payload #>> string_to_array(?, '.') = ?

-- name: Exists
SELECT status FROM sluice_jobs WHERE id = $1

-- name: Retry
-- A deadline already passed is dropped: the operator asks for a run now,
-- which the deadline would refuse (a job cancelled by its deadline is
-- retried so). One still ahead is kept.
UPDATE sluice_jobs
SET status = 'pending', next_run_at = now(), finished_at = NULL, locked_by = NULL, locked_until = NULL,
    max_attempts = CASE WHEN attempts >= max_attempts THEN attempts + 1 ELSE max_attempts END,
    deadline = CASE WHEN deadline <= now() THEN NULL ELSE deadline END,
    updated_at = now()
WHERE id IN (/*LIST*/) AND status IN ('failed', 'cancelled')

-- name: RetryIDs
SELECT id FROM sluice_jobs
WHERE status = $1 AND ($2::text = '' OR type = $3) AND id > $4
ORDER BY id LIMIT 500

-- name: Cancel
UPDATE sluice_jobs SET status = 'cancelled', finished_at = now(), updated_at = now()
WHERE id IN (/*LIST*/) AND status IN ('pending', 'failed')
