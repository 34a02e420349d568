-- Times are UTC text in driver.TextTimeLayout ('YYYY-MM-DD HH:MM:SS.SSS'),
-- which sorts like the time it names and is what strftime('%Y-%m-%d %H:%M:%f','now') yields.
CREATE TABLE IF NOT EXISTS sluice_schema (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sluice_jobs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  queue        TEXT    NOT NULL DEFAULT 'default' CHECK (length(queue) BETWEEN 1 AND 64),
  type         TEXT    NOT NULL CHECK (length(type) BETWEEN 1 AND 64),
  business_key TEXT    NULL CHECK (length(business_key) BETWEEN 1 AND 191),
  dedupe       TEXT    NOT NULL DEFAULT 'permanent' CHECK (dedupe IN ('permanent', 'active')),
  payload      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),
  status       TEXT    NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'processing', 'success', 'failed', 'cancelled')),
  priority     INTEGER NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5,
  next_run_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  locked_by    TEXT    NULL,
  locked_until TEXT    NULL,
  last_error   TEXT    NULL,
  result       TEXT    NULL,
  created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  finished_at  TEXT    NULL
);

-- Only claimable and rescuable rows are indexed for the hot path, so
-- finished rows never slow a claim down.
CREATE INDEX IF NOT EXISTS sluice_jobs_pick ON sluice_jobs (queue, priority, next_run_at, id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS sluice_jobs_rescue ON sluice_jobs (locked_until) WHERE status = 'processing';
-- A key is taken by every permanent-mode row and by live active-mode rows.
-- Keyless jobs stay out of the index, so they cost it nothing.
CREATE UNIQUE INDEX IF NOT EXISTS sluice_jobs_key ON sluice_jobs (business_key)
  WHERE business_key IS NOT NULL AND (dedupe = 'permanent' OR status IN ('pending', 'processing'));
CREATE INDEX IF NOT EXISTS sluice_jobs_finished ON sluice_jobs (status, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS sluice_jobs_failed ON sluice_jobs (queue) WHERE status = 'failed';

CREATE TABLE IF NOT EXISTS sluice_leases (
  name        TEXT    PRIMARY KEY,
  holder      TEXT    NOT NULL,
  fence       INTEGER NOT NULL,
  acquired_at TEXT    NOT NULL,
  expires_at  TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS sluice_queues (
  name       TEXT    PRIMARY KEY,
  paused     INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
