-- Roll-ups of finished jobs per queue, type, outcome and minute; buckets
-- past the success retention are compacted to hours by the maintenance
-- leader. Writers add to a bucket and never count finished rows.
CREATE TABLE IF NOT EXISTS sluice_stats (
  queue   TEXT    NOT NULL,
  type    TEXT    NOT NULL,
  outcome TEXT    NOT NULL,
  bucket  TEXT    NOT NULL,
  count   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, type, outcome, bucket)
);
CREATE INDEX IF NOT EXISTS sluice_stats_bucket ON sluice_stats (bucket);

-- One heartbeat row per running process, for the dashboard's Workers page.
CREATE TABLE IF NOT EXISTS sluice_nodes (
  id          TEXT    PRIMARY KEY,
  version     TEXT    NOT NULL,
  started_at  TEXT    NOT NULL,
  last_seen   TEXT    NOT NULL,
  concurrency INTEGER NOT NULL DEFAULT 0,
  running     INTEGER NOT NULL DEFAULT 0
);

-- The dashboard lists finished jobs by status, newest first. One partial
-- index per finished status (SQLite only uses a partial index whose WHERE
-- appears in the query) keeps the claim path free of them: a job enters
-- one only when it finishes.
CREATE INDEX IF NOT EXISTS sluice_jobs_success_id ON sluice_jobs (id) WHERE status = 'success';
CREATE INDEX IF NOT EXISTS sluice_jobs_failed_id ON sluice_jobs (id) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS sluice_jobs_cancelled_id ON sluice_jobs (id) WHERE status = 'cancelled';
