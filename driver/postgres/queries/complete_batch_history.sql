-- complete_batch.sql for a batch in which some outcome carries a history
-- entry; a batch without one (every attempt of jobs that never failed)
-- takes complete_batch.sql, which leaves the column alone.
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
