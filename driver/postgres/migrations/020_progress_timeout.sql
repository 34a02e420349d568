-- Progress timeouts (issue 38): a running job that reports no progress
-- for this long is stuck, and the worker holding its lease stops it
-- (docs/guarantees.md "Stuck jobs"). The job's own timeout, in
-- microseconds; NULL, as every older row has, defers to its type's
-- (a worker's config). No index: the worker reads it with its row.
ALTER TABLE sluice_jobs ADD COLUMN IF NOT EXISTS progress_timeout_us bigint;
