-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT (EXTRACT(EPOCH FROM finished_at - next_run_at) * 1000000)::bigint FROM sluice_jobs WHERE type = $1 AND finished_at IS NOT NULL
