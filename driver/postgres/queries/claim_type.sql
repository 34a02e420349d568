-- claim.sql for one type of job.
UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = $1,
    locked_until = clock_timestamp() + $2::bigint * interval '1 microsecond', updated_at = now()
WHERE id IN (
  SELECT id FROM (
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = $3 AND partition_key = '' AND type = $4 AND next_run_at <= now()
      ORDER BY priority, next_run_at, id
      LIMIT $5
      FOR UPDATE SKIP LOCKED) unpartitioned
    UNION ALL
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = $3 AND type = $4 AND next_run_at <= now()
      ORDER BY priority, next_run_at, id
      LIMIT $5
      FOR UPDATE SKIP LOCKED) partitioned
  ) pending
  ORDER BY priority, next_run_at, id
  LIMIT $5)
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
