-- The last slot each schedule handled. Every node runs the scheduler; the
-- version column makes advancing a schedule a compare-and-set, and the
-- slot's job key makes each slot fire once whoever gets there first.
CREATE TABLE IF NOT EXISTS sluice_schedules (
  name        VARCHAR(191) NOT NULL,
  last_slot   DATETIME(6)  NOT NULL,
  last_job_id BIGINT       NULL,
  version     BIGINT       NOT NULL DEFAULT 0,
  fires       BIGINT       NOT NULL DEFAULT 0,
  skips       BIGINT       NOT NULL DEFAULT 0,
  updated_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
