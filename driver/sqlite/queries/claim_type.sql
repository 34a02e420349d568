-- claim.sql for one type of job (?5 + 0: see claim.sql).
UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = ?1,
    locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?2), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM (
    SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = ?3 AND partition_key = '' AND type = ?4 AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    UNION ALL
    SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = ?3 AND type = ?4 AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY priority, next_run_at, id
    LIMIT ?5 + 0))
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
