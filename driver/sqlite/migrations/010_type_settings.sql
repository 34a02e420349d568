-- Plain-SQL enqueues take their type's settings (issue 24), and every
-- constraint is named after its column.
--
-- sluice_types holds, per job type, what a job of that type takes when its
-- INSERT leaves queue, max_attempts or dedupe out: `sluice migrate` with a
-- config file and every process that starts workers or a pass write it
-- from sluice.yaml (driver.TypeSettings). Those three columns now default
-- to their zero value ('' or 0), which no stored job keeps. SQLite cannot
-- change NEW in a BEFORE trigger, so the AFTER INSERT trigger below
-- rewrites a new row that has a zero there: each zero becomes the type's
-- setting, or the old default (default, 5, permanent) for a type
-- sluice_types does not know. A value the INSERT gives wins. Its CHECKs
-- therefore admit the zero, which lasts only until the trigger, within the
-- same statement. The unique key is checked at the insert and again at
-- the rewrite: a new row is pending, so it holds its key whatever its
-- dedupe, and the rewrite finds the key as the insert did. sluice's own
-- enqueues give every value, so the trigger's WHEN skips them.
--
-- The BEFORE INSERT trigger refuses what plain SQL must not store and
-- older rows may hold (older versions accepted them, so a CHECK would
-- refuse the copy below and then every claim of such a row): a payload
-- that is not a JSON object and max_attempts below 1.
--
-- SQLite cannot rename or change a column's constraints or default, so the
-- table is rebuilt (its rows copied, in this one transaction) with its
-- indexes; the sequence of ids goes on from where it was, so the ids of
-- purged jobs are not given again.
CREATE TABLE IF NOT EXISTS sluice_types (
  type         TEXT    PRIMARY KEY,
  queue        TEXT    NOT NULL CONSTRAINT sluice_types_queue_check CHECK (length(queue) BETWEEN 1 AND 64),
  max_attempts INTEGER NOT NULL CONSTRAINT sluice_types_max_attempts_check CHECK (max_attempts >= 1),
  dedupe       TEXT    NOT NULL CONSTRAINT sluice_types_dedupe_check CHECK (dedupe IN ('permanent', 'active')),
  updated_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);

CREATE TABLE sluice_jobs_rebuilt (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  queue         TEXT    NOT NULL DEFAULT ''
                CONSTRAINT sluice_jobs_queue_check CHECK (length(queue) <= 64),
  type          TEXT    NOT NULL CONSTRAINT sluice_jobs_type_check CHECK (length(type) BETWEEN 1 AND 64),
  business_key  TEXT    NULL CONSTRAINT sluice_jobs_business_key_check CHECK (length(business_key) BETWEEN 1 AND 191),
  dedupe        TEXT    NOT NULL DEFAULT ''
                CONSTRAINT sluice_jobs_dedupe_check CHECK (dedupe IN ('permanent', 'active', '')),
  payload       TEXT    NOT NULL DEFAULT '{}' CONSTRAINT sluice_jobs_payload_check CHECK (json_valid(payload)),
  status        TEXT    NOT NULL DEFAULT 'pending'
                CONSTRAINT sluice_jobs_status_check CHECK (status IN ('pending', 'processing', 'success', 'failed', 'cancelled')),
  priority      INTEGER NOT NULL DEFAULT 0,
  attempts      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL DEFAULT 0,
  next_run_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  locked_by     TEXT    NULL,
  locked_until  TEXT    NULL,
  last_error    TEXT    NULL,
  result        TEXT    NULL,
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  finished_at   TEXT    NULL,
  history       TEXT    NULL,
  traceparent   TEXT    NULL,
  partition_key TEXT    NOT NULL DEFAULT ''
                CONSTRAINT sluice_jobs_partition_key_check CHECK (length(partition_key) <= 64)
);
INSERT INTO sluice_jobs_rebuilt (id, queue, type, business_key, dedupe, payload, status, priority, attempts,
    max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at,
    history, traceparent, partition_key)
  SELECT id, queue, type, business_key, dedupe, payload, status, priority, attempts,
    max_attempts, next_run_at, locked_by, locked_until, last_error, result, created_at, updated_at, finished_at,
    history, traceparent, partition_key
  FROM sluice_jobs;
DELETE FROM sqlite_sequence WHERE name = 'sluice_jobs_rebuilt';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'sluice_jobs_rebuilt', seq FROM sqlite_sequence WHERE name = 'sluice_jobs';
DROP TABLE sluice_jobs;
ALTER TABLE sluice_jobs_rebuilt RENAME TO sluice_jobs;

CREATE INDEX sluice_jobs_rescue ON sluice_jobs (locked_until) WHERE status = 'processing';
CREATE UNIQUE INDEX sluice_jobs_business_key_unique ON sluice_jobs (business_key)
  WHERE business_key IS NOT NULL AND (dedupe = 'permanent' OR status IN ('pending', 'processing'));
CREATE INDEX sluice_jobs_finished ON sluice_jobs (status, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX sluice_jobs_failed ON sluice_jobs (queue) WHERE status = 'failed';
CREATE INDEX sluice_jobs_success_id ON sluice_jobs (id) WHERE status = 'success';
CREATE INDEX sluice_jobs_failed_id ON sluice_jobs (id) WHERE status = 'failed';
CREATE INDEX sluice_jobs_cancelled_id ON sluice_jobs (id) WHERE status = 'cancelled';
CREATE INDEX sluice_jobs_pending ON sluice_jobs (queue, partition_key, priority, next_run_at, id)
  WHERE status = 'pending';
CREATE INDEX sluice_jobs_partitioned_pending ON sluice_jobs (queue, priority, next_run_at, id)
  WHERE status = 'pending' AND length(partition_key) > 0;

-- The comments of two dollar signs at the ends of each trigger mark its
-- body, whose semicolons do not end the statement (driver.SplitStatements).
CREATE TRIGGER sluice_jobs_insert_check BEFORE INSERT ON sluice_jobs -- $$
  WHEN NEW.max_attempts < 0 OR (json_valid(NEW.payload) AND json_type(NEW.payload) <> 'object')
BEGIN
  SELECT RAISE(ABORT, 'sluice_jobs.max_attempts: must be at least 1') WHERE NEW.max_attempts < 0;
  SELECT RAISE(ABORT, 'sluice_jobs.payload: must be a JSON object');
END -- $$
;

CREATE TRIGGER sluice_jobs_insert AFTER INSERT ON sluice_jobs -- $$
  WHEN NEW.queue = '' OR NEW.max_attempts = 0 OR NEW.dedupe = ''
BEGIN
  UPDATE sluice_jobs SET
    queue = CASE WHEN NEW.queue = ''
      THEN COALESCE((SELECT t.queue FROM sluice_types t WHERE t.type = NEW.type), 'default') ELSE queue END,
    max_attempts = CASE WHEN NEW.max_attempts = 0
      THEN COALESCE((SELECT t.max_attempts FROM sluice_types t WHERE t.type = NEW.type), 5) ELSE max_attempts END,
    dedupe = CASE WHEN NEW.dedupe = ''
      THEN COALESCE((SELECT t.dedupe FROM sluice_types t WHERE t.type = NEW.type), 'permanent') ELSE dedupe END
  WHERE id = NEW.id;
END -- $$
;
