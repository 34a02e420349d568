-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT TIMESTAMPDIFF(MICROSECOND, next_run_at, finished_at) FROM sluice_jobs WHERE type = ? AND finished_at IS NOT NULL
