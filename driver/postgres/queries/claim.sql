-- The queue's first runnable jobs in its global order, a merge of its jobs
-- without a partition (sluice_jobs_pending's partition '') and those with
-- one (sluice_jobs_partitioned_pending): each branch reads at most $4 rows
-- of its index in claim order, and the outer ORDER BY ... LIMIT sorts those
-- 2 × $4 rows at most. Without partitions the second branch is an empty
-- index range.
--
-- FOR UPDATE cannot lock the rows of a UNION, so each branch locks its own:
-- SKIP LOCKED lets concurrent claimers pass each other's rows, and the
-- locking subquery re-checks status on rows changed since its snapshot. A
-- branch may lock a few rows the LIMIT then leaves out; they stay pending,
-- skipped by other claimers until this statement commits.
-- The lease runs from clock_timestamp(), not now(): now() is when the
-- statement began, and a claim that waited behind a lock would hand out a
-- lease already spent.
UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = $1,
    locked_until = clock_timestamp() + $2::bigint * interval '1 microsecond', updated_at = now()
WHERE id IN (
  SELECT id FROM (
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = $3 AND partition_key = '' AND next_run_at <= now()
      ORDER BY priority, next_run_at, id
      LIMIT $4
      FOR UPDATE SKIP LOCKED) unpartitioned
    UNION ALL
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = $3 AND next_run_at <= now()
      ORDER BY priority, next_run_at, id
      LIMIT $4
      FOR UPDATE SKIP LOCKED) partitioned
  ) pending
  ORDER BY priority, next_run_at, id
  LIMIT $4)
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
