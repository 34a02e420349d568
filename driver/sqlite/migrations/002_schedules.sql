-- The last slot each schedule handled. Every node runs the scheduler; the
-- version column makes advancing a schedule a compare-and-set, and the
-- slot's job key makes each slot fire once whoever gets there first.
CREATE TABLE IF NOT EXISTS sluice_schedules (
  name        TEXT    PRIMARY KEY,
  last_slot   TEXT    NOT NULL,
  last_job_id INTEGER NULL,
  version     INTEGER NOT NULL DEFAULT 0,
  fires       INTEGER NOT NULL DEFAULT 0,
  skips       INTEGER NOT NULL DEFAULT 0,
  updated_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
