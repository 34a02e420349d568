-- Per-attempt logs (issue 38): what each attempt of a job wrote (a
-- command's stdout and stderr, interleaved), its first 32 KiB and last
-- 32 KiB with a marker line between (driver.AttemptLogs). A row is
-- written with its attempt's fenced completion, only when that was
-- applied, and keyed by job and attempt number. It goes with its job
-- through the foreign key, whatever deletes the job; a migration that
-- rebuilds sluice_jobs must keep these rows in mind.
CREATE TABLE IF NOT EXISTS sluice_attempt_logs (
  job_id     bigint      NOT NULL REFERENCES sluice_jobs (id) ON DELETE CASCADE,
  attempt    integer     NOT NULL,
  text       text        NOT NULL,
  bytes      bigint      NOT NULL,
  omitted    bigint      NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (job_id, attempt)
);
