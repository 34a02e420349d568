-- The queue's first runnable jobs in its global order, a merge of its jobs
-- without a partition (sluice_jobs_pending's partition '') and those with
-- one (sluice_jobs_partitioned_pending). The compound's ORDER BY ... LIMIT
-- is a merge of the two index ranges, each read in claim order and only
-- as far as the merge needs (MERGE (UNION ALL) in EXPLAIN QUERY PLAN):
-- nothing is sorted, and without partitions the second range is an empty
-- seek. A LIMIT in each branch would instead make SQLite copy up to ?4
-- rows of each and sort them. Numbered parameters let both branches share
-- the arguments. The limit is written ?4 + 0: SQLite plans a bare ?4 with
-- its bound value and so recompiles the statement, which the driver
-- prepares once, whenever a claim asks for another number of jobs.
UPDATE sluice_jobs
SET status = 'processing', attempts = attempts + 1, locked_by = ?1,
    locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?2), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (
  SELECT id FROM (
    SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = ?3 AND partition_key = '' AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    UNION ALL
    SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = ?3 AND next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY priority, next_run_at, id
    LIMIT ?4 + 0))
RETURNING id, queue, type, business_key, dedupe, payload, status, priority, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at, traceparent, partition_key
