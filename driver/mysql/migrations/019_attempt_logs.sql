-- Per-attempt logs (issue 38): what each attempt of a job wrote (a
-- command's stdout and stderr, interleaved), its first 32 KiB and last
-- 32 KiB with a marker line between (driver.AttemptLogs). A row is
-- written with its attempt's fenced completion, only when that was
-- applied, and keyed by job and attempt number. It goes with its job
-- through the foreign key, whatever deletes the job; a migration that
-- rebuilds sluice_jobs must keep these rows in mind.
-- MEDIUMTEXT: 64 KiB and the marker line do not fit TEXT.
CREATE TABLE IF NOT EXISTS sluice_attempt_logs (
  job_id     BIGINT      NOT NULL,
  attempt    INT         NOT NULL,
  text       MEDIUMTEXT  NOT NULL,
  bytes      BIGINT      NOT NULL,
  omitted    BIGINT      NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (job_id, attempt),
  CONSTRAINT sluice_attempt_logs_job FOREIGN KEY (job_id) REFERENCES sluice_jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
