-- What happens to claimed jobs: heartbeats, completions, the rescue of
-- expired leases and the purge of finished jobs.

-- name: Heartbeat
-- clock_timestamp(), not now(): now() is when the statement started, and a
-- heartbeat that waited behind a lock for longer than the lease would
-- otherwise write an expiry that has already passed.
UPDATE sluice_jobs SET locked_until = clock_timestamp() + $1::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE locked_by = $2 AND status = 'processing' AND id IN (/*LIST*/)

-- name: Held
SELECT id FROM sluice_jobs WHERE locked_by = $1 AND status = 'processing' AND id IN (/*LIST*/)

-- name: Progress
-- What a running attempt reports, fenced like every completion: a stale
-- token or a finished job changes nothing. Arguments: done, total,
-- message, id, token.
UPDATE sluice_jobs
SET progress_done = $1, progress_total = $2, progress_message = $3, progress_at = clock_timestamp()
WHERE id = $4 AND locked_by = $5 AND status = 'processing'

-- name: Complete
-- history: see CompleteMany.
UPDATE sluice_jobs
SET status = $1, attempts = attempts - $2::int,
    next_run_at = CASE WHEN $3::int = 1 THEN next_run_at ELSE now() + $4::bigint * interval '1 microsecond' END,
    finished_at = CASE WHEN $5::int = 1 THEN now() ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE($6, last_error), result = COALESCE($7, result), updated_at = now(),
    history = CASE WHEN $8::jsonb IS NULL THEN history ELSE
      (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $9::int THEN history - 0 - 0
            WHEN jsonb_array_length(COALESCE(history, '[]')) = $10::int THEN history - 0
            ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('end', now()) || $11::jsonb) END
WHERE id = $12 AND locked_by = $13 AND status = 'processing'

-- name: CompleteMany
-- One statement completes a whole batch. The fence is the lease token
-- alone: the lease_invariant constraint (migration 4) guarantees that a
-- row holding a token is processing. Leaving status out of the WHERE keeps
-- the planner from driving the join through the partial rescue index,
-- whose statistics are stale under load (a generic plan then scanned every
-- processing row once per completed job); it joins on the primary key.
UPDATE sluice_jobs AS j
SET status = u.status, attempts = j.attempts - u.refund,
    next_run_at = CASE WHEN u.final THEN j.next_run_at ELSE now() + u.delay_us * interval '1 microsecond' END,
    finished_at = CASE WHEN u.final THEN now() ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(u.error, j.last_error), result = COALESCE(u.result, j.result), updated_at = now()
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::int[], $6::bool[], $7::text[], $8::text[])
  AS u(id, token, status, delay_us, refund, final, error, result)
WHERE j.id = u.id AND j.locked_by = u.token
RETURNING j.id

-- name: CompleteManyHistory
-- CompleteMany for a batch in which some outcome carries a history
-- entry; a batch without one (every attempt of jobs that never failed)
-- takes CompleteMany, which leaves the column alone.
--
-- An attempt with a history entry is appended to the job's history, the
-- oldest dropped past keep; a smaller keep than before shrinks the history
-- by one more each attempt until it fits. The entry's end is the database
-- clock.
UPDATE sluice_jobs AS j
SET status = u.status, attempts = j.attempts - u.refund,
    next_run_at = CASE WHEN u.final THEN j.next_run_at ELSE now() + u.delay_us * interval '1 microsecond' END,
    finished_at = CASE WHEN u.final THEN now() ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(u.error, j.last_error), result = COALESCE(u.result, j.result), updated_at = now(),
    history = CASE WHEN u.entry IS NULL THEN j.history ELSE
      (CASE WHEN jsonb_array_length(COALESCE(j.history, '[]')) > u.keep THEN j.history - 0 - 0
            WHEN jsonb_array_length(COALESCE(j.history, '[]')) = u.keep THEN j.history - 0
            ELSE COALESCE(j.history, '[]') END)
      || jsonb_build_array(jsonb_build_object('end', now()) || u.entry::jsonb) END
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::int[], $6::bool[], $7::text[], $8::text[], $9::text[], $10::int[])
  AS u(id, token, status, delay_us, refund, final, error, result, entry, keep)
WHERE j.id = u.id AND j.locked_by = u.token
RETURNING j.id

-- name: Rescue
-- The locking subquery re-checks status and lease on rows changed since its
-- snapshot, so a job completed meanwhile is never rescued; SKIP LOCKED passes
-- over rows a completer or heartbeat is writing right now. The lost attempt
-- goes into the history as lease_expired, trimmed to $1 and $2 (the same number) as CompleteMany does.
-- A job its claim never started (prefetched_by is the lease's token) gets
-- its attempt back, goes to pending whatever its attempts, and its entry
-- says released.
UPDATE sluice_jobs
SET status = CASE WHEN attempts >= max_attempts AND NOT COALESCE(prefetched_by = locked_by, false) THEN 'failed' ELSE 'pending' END,
    attempts = attempts - CASE WHEN COALESCE(prefetched_by = locked_by, false) THEN 1 ELSE 0 END,
    finished_at = CASE WHEN attempts >= max_attempts AND NOT COALESCE(prefetched_by = locked_by, false) THEN now() ELSE NULL END,
    next_run_at = now(),
    last_error = 'lease expired at ' || to_char(locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')
                 || ' UTC: the worker stopped heartbeating (killed, hung or cut off)',
    history = (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $1::int THEN history - 0 - 0
                    WHEN jsonb_array_length(COALESCE(history, '[]')) = $2::int THEN history - 0
                    ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('attempt', attempts, 'end', now(), 'outcome', CASE WHEN COALESCE(prefetched_by = locked_by, false) THEN 'released' ELSE 'lease_expired' END,
           'error', 'lease expired at ' || to_char(locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')
                    || ' UTC: the worker stopped heartbeating (killed, hung or cut off)')),
    prefetched_by = NULL, locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE id IN (
  SELECT id FROM sluice_jobs WHERE status = 'processing' AND locked_until < now()
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING status, queue, type

-- name: SweepDeadlines
-- Pending jobs whose deadline passed before a claim started them (claims
-- skip them) become cancelled, in deadline order, a range of the index
-- sluice_jobs_deadline. The reason, the deadline to the second, goes into
-- last_error and into the history as a cancelled entry, trimmed to the
-- first two arguments (the same number) as Complete does; its attempt is
-- the attempts made so far (0 for a job that never ran). SKIP LOCKED passes over
-- rows a claim is taking right now.
UPDATE sluice_jobs
SET status = 'cancelled', finished_at = now(),
    last_error = 'deadline ' || to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' passed before the job started',
    history = (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $1::int THEN history - 0 - 0
                    WHEN jsonb_array_length(COALESCE(history, '[]')) = $2::int THEN history - 0
                    ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('attempt', attempts, 'end', now(), 'outcome', 'cancelled',
           'error', 'deadline ' || to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' passed before the job started')),
    updated_at = now()
WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= now()
  ORDER BY deadline
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
  AND status = 'pending'

-- name: Purge
-- The locking subquery re-checks status, so a job retried since the
-- snapshot is not deleted.
DELETE FROM sluice_jobs WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = $1 AND finished_at IS NOT NULL AND finished_at < now() + $2::bigint * interval '1 microsecond'
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
