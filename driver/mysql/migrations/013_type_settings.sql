-- Plain-SQL enqueues take their type's settings (issue 24), and every
-- constraint is named after its column, so that a refused row says which
-- column it broke (MariaDB named them CONSTRAINT_1..5, MySQL
-- sluice_jobs_chk_1..5; the driver drops those before this file runs).
--
-- sluice_types holds, per job type, what a job of that type takes when its
-- INSERT leaves queue, max_attempts or dedupe out: `sluice migrate` with a
-- config file and every process that starts workers or a pass write it
-- from sluice.yaml (driver.TypeSettings). Those three columns now default
-- to their zero value ('' or 0), which no stored job keeps: the BEFORE
-- INSERT trigger below replaces each one left at zero with the type's
-- setting, or with the old default (default, 5, permanent) for a type
-- sluice_types does not know. A value the INSERT gives wins. The trigger
-- runs before the row's CHECK constraints and before its unique key is
-- computed (key_active reads the dedupe the trigger chose), and inside the
-- application's own transaction. sluice's own enqueues give every value,
-- so they skip the lookup.
--
-- The trigger also refuses what plain SQL must not store and older rows may
-- hold (older versions accepted them, so a CHECK would refuse the upgrade
-- and then every claim of such a row): a payload that is not a JSON object
-- and max_attempts below 1.
CREATE TABLE IF NOT EXISTS sluice_types (
  type         VARCHAR(64) NOT NULL,
  queue        VARCHAR(64) NOT NULL,
  max_attempts INT         NOT NULL,
  dedupe       VARCHAR(16) NOT NULL,
  updated_at   DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (type),
  CONSTRAINT sluice_types_queue_check CHECK (CHAR_LENGTH(queue) BETWEEN 1 AND 64),
  CONSTRAINT sluice_types_max_attempts_check CHECK (max_attempts >= 1),
  CONSTRAINT sluice_types_dedupe_check CHECK (dedupe IN ('permanent', 'active'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

ALTER TABLE sluice_schema ADD CONSTRAINT sluice_schema_id_check CHECK (id = 1);

-- One ALTER: the CHECKs are verified against every row once (they held
-- since the first version, under other names).
ALTER TABLE sluice_jobs
  ALTER COLUMN queue SET DEFAULT '',
  ALTER COLUMN dedupe SET DEFAULT '',
  ALTER COLUMN max_attempts SET DEFAULT 0,
  RENAME INDEX sluice_jobs_key TO sluice_jobs_business_key_unique,
  ADD CONSTRAINT sluice_jobs_queue_check CHECK (CHAR_LENGTH(queue) BETWEEN 1 AND 64),
  ADD CONSTRAINT sluice_jobs_type_check CHECK (CHAR_LENGTH(type) BETWEEN 1 AND 64),
  ADD CONSTRAINT sluice_jobs_business_key_check CHECK (CHAR_LENGTH(business_key) BETWEEN 1 AND 191),
  ADD CONSTRAINT sluice_jobs_dedupe_check CHECK (dedupe IN ('permanent', 'active')),
  ADD CONSTRAINT sluice_jobs_status_check CHECK (status IN ('pending', 'processing', 'success', 'failed', 'cancelled'));

-- The comments of two dollar signs at the ends of the trigger mark its
-- body, whose semicolons do not end the statement (driver.SplitStatements).
DROP TRIGGER IF EXISTS sluice_jobs_insert;
CREATE TRIGGER sluice_jobs_insert BEFORE INSERT ON sluice_jobs FOR EACH ROW -- $$
BEGIN
  IF NEW.queue = '' OR NEW.max_attempts = 0 OR NEW.dedupe = '' THEN
    BEGIN
      DECLARE t_queue VARCHAR(64);
      DECLARE t_max_attempts INT;
      DECLARE t_dedupe VARCHAR(16);
      -- The outer join always gives one row, so a type without settings
      -- raises no "no data" warning in the application's session.
      SELECT COALESCE(t.queue, 'default'), COALESCE(t.max_attempts, 5), COALESCE(t.dedupe, 'permanent')
        INTO t_queue, t_max_attempts, t_dedupe
        FROM (SELECT 1) AS one LEFT JOIN sluice_types AS t ON t.type = NEW.type;
      IF NEW.queue = '' THEN SET NEW.queue = t_queue; END IF;
      IF NEW.max_attempts = 0 THEN SET NEW.max_attempts = t_max_attempts; END IF;
      IF NEW.dedupe = '' THEN SET NEW.dedupe = t_dedupe; END IF;
    END;
  END IF;
  IF NEW.max_attempts < 1 THEN
    SIGNAL SQLSTATE '23000' SET MESSAGE_TEXT = 'sluice_jobs.max_attempts: must be at least 1';
  END IF;
  IF JSON_TYPE(NEW.payload) <> 'OBJECT' THEN
    SIGNAL SQLSTATE '23000' SET MESSAGE_TEXT = 'sluice_jobs.payload: must be a JSON object';
  END IF;
END -- $$
;
