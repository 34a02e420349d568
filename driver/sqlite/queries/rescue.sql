-- The lost attempt goes into the history as lease_expired, trimmed to the
-- first two arguments (the same number) as complete.sql does.
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
