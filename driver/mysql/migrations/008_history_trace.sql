-- Attempt history and trace context (issue 15). history is a JSON array of
-- the job's last attempts, appended by the completing UPDATE itself, so it
-- costs no extra statement and goes with the row on purge. It stays NULL
-- for a job that never failed, so that the common case writes nothing.
-- traceparent is the W3C trace context of the enqueuing caller, which the
-- job's run continues. Both are nullable and have no default, so the ALTER
-- is instant on InnoDB.
ALTER TABLE sluice_jobs ADD COLUMN history JSON NULL, ADD COLUMN traceparent VARCHAR(128) NULL;
