-- Plain-SQL enqueues take their type's settings (issue 24).
--
-- sluice_types holds, per job type, what a job of that type takes when its
-- INSERT leaves queue, max_attempts or dedupe out: `sluice migrate` with a
-- config file and every process that starts workers or a pass write it
-- from sluice.yaml (driver.TypeSettings). Those three columns now default
-- to their zero value ('' or 0), which no stored job keeps: the BEFORE
-- INSERT trigger below replaces each one left at zero with the type's
-- setting, or with the old default (default, 5, permanent) for a type
-- sluice_types does not know. A value the INSERT gives wins. The trigger
-- runs before the row's CHECK constraints and before its index entries
-- (the unique key's condition reads the dedupe the trigger chose), and
-- inside the application's own transaction. sluice's own enqueues give
-- every value, so they skip the lookup.
--
-- The trigger also refuses what plain SQL must not store and older rows may
-- hold (older versions accepted them, so a CHECK would refuse the upgrade
-- and then every claim of such a row): a payload that is not a JSON object
-- and max_attempts below 1. The CHECK constraints of sluice_jobs are
-- already named after their columns (sluice_jobs_queue_check, ...); the
-- unique index is renamed after its column too.
CREATE TABLE IF NOT EXISTS sluice_types (
  type         text        PRIMARY KEY,
  queue        text        NOT NULL CHECK (length(queue) BETWEEN 1 AND 64),
  max_attempts integer     NOT NULL CHECK (max_attempts >= 1),
  dedupe       text        NOT NULL CHECK (dedupe IN ('permanent', 'active')),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE sluice_jobs
  ALTER COLUMN queue SET DEFAULT '',
  ALTER COLUMN dedupe SET DEFAULT '',
  ALTER COLUMN max_attempts SET DEFAULT 0;
ALTER INDEX IF EXISTS sluice_jobs_key RENAME TO sluice_jobs_business_key_unique;

CREATE OR REPLACE FUNCTION sluice_jobs_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t sluice_types%ROWTYPE;
BEGIN
  IF NEW.queue = '' OR NEW.max_attempts = 0 OR NEW.dedupe = '' THEN
    SELECT * INTO t FROM sluice_types WHERE type = NEW.type;
    IF NEW.queue = '' THEN NEW.queue := COALESCE(t.queue, 'default'); END IF;
    IF NEW.max_attempts = 0 THEN NEW.max_attempts := COALESCE(t.max_attempts, 5); END IF;
    IF NEW.dedupe = '' THEN NEW.dedupe := COALESCE(t.dedupe, 'permanent'); END IF;
  END IF;
  IF NEW.max_attempts < 1 THEN
    RAISE EXCEPTION '%.max_attempts: must be at least 1', TG_TABLE_NAME
      USING ERRCODE = 'check_violation', COLUMN = 'max_attempts', TABLE = TG_TABLE_NAME;
  END IF;
  IF jsonb_typeof(NEW.payload) <> 'object' THEN
    RAISE EXCEPTION '%.payload: must be a JSON object', TG_TABLE_NAME
      USING ERRCODE = 'check_violation', COLUMN = 'payload', TABLE = TG_TABLE_NAME;
  END IF;
  RETURN NEW;
END;
$$;

DROP TRIGGER IF EXISTS sluice_jobs_insert ON sluice_jobs;
CREATE TRIGGER sluice_jobs_insert BEFORE INSERT ON sluice_jobs
  FOR EACH ROW EXECUTE FUNCTION sluice_jobs_insert();
