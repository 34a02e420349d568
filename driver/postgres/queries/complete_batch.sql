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
