-- What happens to claimed jobs: heartbeats, completions, the rescue of
-- expired leases and the purge of finished jobs.

-- name: Heartbeat
UPDATE sluice_jobs SET locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

-- name: Held
SELECT id FROM sluice_jobs WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

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
-- first two arguments (the same number) as Complete does.
UPDATE sluice_jobs
SET status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'pending' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE NULL END,
    next_run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    last_error = 'lease expired at ' || locked_until || ' UTC: the worker stopped heartbeating (killed, hung or cut off)',
    history = json_insert(
      CASE WHEN json_array_length(COALESCE(history, '[]')) > ? THEN json_remove(history, '$[0]', '$[0]')
           WHEN json_array_length(COALESCE(history, '[]')) = ? THEN json_remove(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$[#]', json_object('attempt', attempts, 'end', strftime('%Y-%m-%d %H:%M:%f', 'now'), 'outcome', 'lease_expired',
        'error', 'lease expired at ' || locked_until || ' UTC: the worker stopped heartbeating (killed, hung or cut off)')),
    locked_by = NULL, locked_until = NULL, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM sluice_jobs WHERE status = 'processing' AND locked_until < strftime('%Y-%m-%d %H:%M:%f', 'now') LIMIT ?)
RETURNING status, queue, type

-- name: Purge
DELETE FROM sluice_jobs WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = ? AND finished_at IS NOT NULL AND finished_at < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
  LIMIT ?)
