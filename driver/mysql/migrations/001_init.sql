-- Times are DATETIME(6) in UTC, written with UTC_TIMESTAMP(6): DATETIME does
-- not shift with the session time zone the way TIMESTAMP does, and it
-- outlives 2038. Plain INSERTs from an application may leave next_run_at,
-- created_at and updated_at out; their defaults are UTC too.
-- utf8mb4_bin compares like SQLite and PostgreSQL: case-sensitive and exact.
CREATE TABLE IF NOT EXISTS sluice_schema (
  id      TINYINT NOT NULL PRIMARY KEY,
  version INT     NOT NULL,
  CHECK (id = 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- MySQL and MariaDB have no partial indexes, so the hot-path indexes lead
-- with status: a claim reads the 'pending' slice of sluice_jobs_pick and a
-- rescue the 'processing' slice of sluice_jobs_rescue, and finished rows sit
-- in other slices that those queries never touch.
--
-- key_active carries the dedupe rule: a key is taken by every permanent-mode
-- row and by pending or processing active-mode rows, and is NULL otherwise,
-- which a UNIQUE index ignores. It is binary so that keys differing only in
-- trailing spaces stay distinct (utf8mb4_bin pads, VARBINARY does not).
CREATE TABLE IF NOT EXISTS sluice_jobs (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  queue        VARCHAR(64)  NOT NULL DEFAULT 'default',
  type         VARCHAR(64)  NOT NULL,
  business_key VARCHAR(191) NULL,
  dedupe       VARCHAR(16)  NOT NULL DEFAULT 'permanent',
  payload      JSON         NOT NULL DEFAULT ('{}'),
  status       VARCHAR(16)  NOT NULL DEFAULT 'pending',
  priority     SMALLINT     NOT NULL DEFAULT 0,
  attempts     INT          NOT NULL DEFAULT 0,
  max_attempts INT          NOT NULL DEFAULT 5,
  next_run_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  locked_by    VARCHAR(64)  NULL,
  locked_until DATETIME(6)  NULL,
  last_error   TEXT         NULL,
  result       MEDIUMTEXT   NULL,
  created_at   DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  updated_at   DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  finished_at  DATETIME(6)  NULL,
  key_active   VARBINARY(764) GENERATED ALWAYS AS (
                 CASE WHEN dedupe = 'permanent' OR status IN ('pending', 'processing')
                 THEN CAST(business_key AS BINARY) END) STORED,
  PRIMARY KEY (id),
  UNIQUE KEY sluice_jobs_key (key_active),
  KEY sluice_jobs_pick (status, queue, priority, next_run_at, id),
  KEY sluice_jobs_rescue (status, locked_until),
  KEY sluice_jobs_finished (status, finished_at),
  KEY sluice_jobs_business_key (business_key),
  CHECK (CHAR_LENGTH(queue) BETWEEN 1 AND 64),
  CHECK (CHAR_LENGTH(type) BETWEEN 1 AND 64),
  CHECK (CHAR_LENGTH(business_key) BETWEEN 1 AND 191),
  CHECK (dedupe IN ('permanent', 'active')),
  CHECK (status IN ('pending', 'processing', 'success', 'failed', 'cancelled'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS sluice_leases (
  name        VARCHAR(191) NOT NULL,
  holder      VARCHAR(191) NOT NULL,
  fence       BIGINT       NOT NULL,
  acquired_at DATETIME(6)  NOT NULL,
  expires_at  DATETIME(6)  NOT NULL,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS sluice_queues (
  name       VARCHAR(64) NOT NULL,
  paused     BOOLEAN     NOT NULL DEFAULT FALSE,
  updated_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
