-- The locking subquery re-checks status and lease on rows changed since its
-- snapshot, so a job completed meanwhile is never rescued; SKIP LOCKED passes
-- over rows a completer or heartbeat is writing right now.
UPDATE sluice_jobs
SET status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'pending' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN now() ELSE NULL END,
    next_run_at = now(),
    last_error = 'lease expired at ' || to_char(locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')
                 || ' UTC: the worker stopped heartbeating (killed, hung or cut off)',
    locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE id IN (
  SELECT id FROM sluice_jobs WHERE status = 'processing' AND locked_until < now()
  LIMIT $1
  FOR UPDATE SKIP LOCKED)
RETURNING status, queue, type
