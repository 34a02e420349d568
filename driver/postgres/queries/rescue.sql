-- The locking subquery re-checks status and lease on rows changed since its
-- snapshot, so a job completed meanwhile is never rescued; SKIP LOCKED passes
-- over rows a completer or heartbeat is writing right now. The lost attempt
-- goes into the history as lease_expired, trimmed to $1 and $2 (the same number) as complete_batch.sql does.
UPDATE sluice_jobs
SET status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'pending' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN now() ELSE NULL END,
    next_run_at = now(),
    last_error = 'lease expired at ' || to_char(locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')
                 || ' UTC: the worker stopped heartbeating (killed, hung or cut off)',
    history = (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $1::int THEN history - 0 - 0
                    WHEN jsonb_array_length(COALESCE(history, '[]')) = $2::int THEN history - 0
                    ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('attempt', attempts, 'end', now(), 'outcome', 'lease_expired',
           'error', 'lease expired at ' || to_char(locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')
                    || ' UTC: the worker stopped heartbeating (killed, hung or cut off)')),
    locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE id IN (
  SELECT id FROM sluice_jobs WHERE status = 'processing' AND locked_until < now()
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING status, queue, type
