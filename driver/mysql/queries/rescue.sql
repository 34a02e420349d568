-- Expired leases in the rescue index's order (partitioned_queue is NULL
-- for every running job), so that the LIMIT stops the read.
-- The lost attempt goes into the history as lease_expired, trimmed to the
-- first two arguments (the same number) as complete.sql does.
UPDATE sluice_jobs FORCE INDEX (sluice_jobs_rescue)
SET status = 'pending', next_run_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'),
    history = JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_OBJECT('attempt', attempts, 'end', UTC_TIMESTAMP(6), 'outcome', 'lease_expired',
        'error', CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'))),
    locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE status = 'processing' AND locked_until < UTC_TIMESTAMP(6) AND attempts < max_attempts
ORDER BY locked_until, partitioned_queue, priority, next_run_at, id
LIMIT ?
