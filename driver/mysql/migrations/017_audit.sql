-- The audit trail of operator actions (issue 36): who (a token's name,
-- never its value, or cli:<os user>), from where, what and on what, for
-- every retry, cancel, delete, pause, resume and circuit change made
-- through the API, the dashboard or the CLI (driver.Audit). Rows are
-- written at the database's time and pruned by maintenance after the
-- configured retention (retention.audit).
CREATE TABLE IF NOT EXISTS sluice_audit (
  id       BIGINT        NOT NULL AUTO_INCREMENT,
  at       DATETIME(6)   NOT NULL,
  actor    VARCHAR(191)  NOT NULL,
  source   VARCHAR(32)   NOT NULL,
  address  VARCHAR(255)  NOT NULL,
  action   VARCHAR(64)   NOT NULL,
  target   VARCHAR(1024) NOT NULL,
  affected BIGINT        NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  -- The prune deletes by age.
  KEY sluice_audit_at (at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
