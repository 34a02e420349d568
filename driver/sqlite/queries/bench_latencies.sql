-- For `sluice bench`: per finished job of a type, the microseconds from
-- next_run_at to finished_at on the database clock.
SELECT CAST((julianday(finished_at) - julianday(next_run_at)) * 86400000000 AS INTEGER) FROM sluice_jobs WHERE type = ? AND finished_at IS NOT NULL
