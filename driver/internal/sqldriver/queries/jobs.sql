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
