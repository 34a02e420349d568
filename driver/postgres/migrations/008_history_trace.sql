-- Attempt history and trace context (issue 15). history is a JSON array of
-- the job's last attempts, appended by the completing UPDATE itself, so it
-- costs no extra statement and goes with the row on purge. It stays NULL
-- for a job that never failed, so that the common case writes nothing.
-- traceparent is the W3C trace context of the enqueuing caller, which the
-- job's run continues.
ALTER TABLE sluice_jobs ADD COLUMN IF NOT EXISTS history jsonb NULL;
ALTER TABLE sluice_jobs ADD COLUMN IF NOT EXISTS traceparent text NULL CHECK (length(traceparent) <= 128);
