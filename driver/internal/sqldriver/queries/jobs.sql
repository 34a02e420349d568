-- Job statements every dialect runs as written here; the rest of each
-- dialect's job statements are in its own queries/jobs.sql.

-- name: List
SELECT /*JOB_COLUMNS*/ FROM sluice_jobs

-- name: Delete
-- A bulk delete's chunk: a job claimed since it was selected is kept.
DELETE FROM sluice_jobs WHERE id IN (/*LIST*/) AND status IN ('pending', 'success', 'failed', 'cancelled')

-- name: Cancelled
-- Which of a worker's running jobs an operator cancelled (polled by each
-- worker that runs jobs; the primary key finds them).
SELECT id FROM sluice_jobs WHERE id IN (/*LIST*/) AND status = 'cancelled'

-- name: ProgressSeen
-- When the running jobs among a worker's, those with a progress timeout,
-- last reported progress (polled with Cancelled; the primary key finds
-- them): a change resets the worker's watchdog.
SELECT id, progress_at FROM sluice_jobs WHERE id IN (/*LIST*/) AND progress_at IS NOT NULL
