-- What happens to claimed jobs: heartbeats, completions, the rescue of
-- expired leases and the purge of finished jobs.

-- name: Heartbeat
UPDATE sluice_jobs SET locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

-- name: Held
SELECT id FROM sluice_jobs WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

-- name: Progress
-- What a running attempt reports, fenced like every completion: a stale
-- token or a finished job changes nothing. Arguments: done, total,
-- message, id, token.
UPDATE sluice_jobs
SET progress_done = ?, progress_total = ?, progress_message = ?, progress_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = ? AND locked_by = ? AND status = 'processing'

-- name: Complete
-- history: the attempt's entry (NULL: none) is appended, the oldest
-- dropped past keep; a smaller keep than before shrinks the history by one
-- more each attempt until it fits. Its end is the database clock.
-- Arguments: status, refund, final, delay, final, error, result, entry,
-- keep, keep, entry, id, token.
UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', ?) END,
    finished_at = CASE WHEN ? = 1 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    history = CASE WHEN ? IS NULL THEN history ELSE json_insert(
      CASE WHEN json_array_length(COALESCE(history, '[]')) > ? THEN json_remove(history, '$[0]', '$[0]')
           WHEN json_array_length(COALESCE(history, '[]')) = ? THEN json_remove(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$[#]', json_set(?, '$.end', strftime('%Y-%m-%d %H:%M:%f', 'now'))) END
WHERE id = ? AND locked_by = ? AND status = 'processing'

-- name: CompleteSuccess
UPDATE sluice_jobs
SET status = 'success', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = NULL, locked_until = NULL,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)
RETURNING id

-- name: Rescue
-- The lost attempt goes into the history as lease_expired, trimmed to the
-- first two arguments (the same number) as Complete does. A job its claim
-- never started (prefetched_by is the lease's token) gets its attempt
-- back, goes to pending whatever its attempts, and its entry says released.
UPDATE sluice_jobs
SET status = CASE WHEN attempts >= max_attempts AND NOT COALESCE(prefetched_by = locked_by, 0) THEN 'failed' ELSE 'pending' END,
    attempts = attempts - COALESCE(prefetched_by = locked_by, 0),
    finished_at = CASE WHEN attempts >= max_attempts AND NOT COALESCE(prefetched_by = locked_by, 0) THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE NULL END,
    next_run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    last_error = 'lease expired at ' || locked_until || ' UTC: the worker stopped heartbeating (killed, hung or cut off)',
    history = json_insert(
      CASE WHEN json_array_length(COALESCE(history, '[]')) > ? THEN json_remove(history, '$[0]', '$[0]')
           WHEN json_array_length(COALESCE(history, '[]')) = ? THEN json_remove(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$[#]', json_object('attempt', attempts, 'end', strftime('%Y-%m-%d %H:%M:%f', 'now'), 'outcome', CASE WHEN COALESCE(prefetched_by = locked_by, 0) THEN 'released' ELSE 'lease_expired' END,
        'error', 'lease expired at ' || locked_until || ' UTC: the worker stopped heartbeating (killed, hung or cut off)')),
    prefetched_by = NULL, locked_by = NULL, locked_until = NULL, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM sluice_jobs WHERE status = 'processing' AND locked_until < strftime('%Y-%m-%d %H:%M:%f', 'now') LIMIT ?)
RETURNING status, queue, type

-- name: SweepDeadlines
-- Pending jobs whose deadline passed before a claim started them (claims
-- skip them) become cancelled, in deadline order, a range of the index
-- sluice_jobs_deadline. The reason, the deadline to the second, goes into
-- last_error and into the history as a cancelled entry, trimmed to the
-- first two arguments (the same number) as Complete does; its attempt is
-- the attempts made so far (0 for a job that never ran).
UPDATE sluice_jobs
SET status = 'cancelled', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    last_error = 'deadline ' || strftime('%Y-%m-%dT%H:%M:%SZ', deadline) || ' passed before the job started',
    history = json_insert(
      CASE WHEN json_array_length(COALESCE(history, '[]')) > ? THEN json_remove(history, '$[0]', '$[0]')
           WHEN json_array_length(COALESCE(history, '[]')) = ? THEN json_remove(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$[#]', json_object('attempt', attempts, 'end', strftime('%Y-%m-%d %H:%M:%f', 'now'), 'outcome', 'cancelled',
        'error', 'deadline ' || strftime('%Y-%m-%dT%H:%M:%SZ', deadline) || ' passed before the job started')),
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= strftime('%Y-%m-%d %H:%M:%f', 'now')
  ORDER BY deadline LIMIT ?)

-- name: Purge
DELETE FROM sluice_jobs WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = ? AND finished_at IS NOT NULL AND finished_at < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
  LIMIT ?)
