UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = ?,
    locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = 'pending' AND queue = ? AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
  ORDER BY priority, next_run_at, id
  LIMIT ?)
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
