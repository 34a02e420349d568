-- The queue's first runnable jobs in its global order, a merge of its jobs
-- without a partition (sluice_jobs_pending's partition '') and those with
-- one (sluice_jobs_partitioned_pending): each branch reads at most ?4 rows
-- of its index in claim order, and the outer ORDER BY ... LIMIT sorts those
-- 2 × ?4 rows at most. Without partitions the second branch is an empty
-- index range. Numbered parameters let both branches share the arguments.
UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = ?1,
    locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?2), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM (
    SELECT * FROM (SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = ?3 AND partition_key = '' AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      ORDER BY priority, next_run_at, id
      LIMIT ?4)
    UNION ALL
    SELECT * FROM (SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = ?3 AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      ORDER BY priority, next_run_at, id
      LIMIT ?4))
  ORDER BY priority, next_run_at, id
  LIMIT ?4)
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
