-- Roll-ups of finished jobs per queue, type, outcome and minute; buckets
-- past the success retention are compacted to hours by the maintenance
-- leader. Writers add to a bucket and never count finished rows.
CREATE TABLE IF NOT EXISTS sluice_stats (
  queue   text        NOT NULL,
  type    text        NOT NULL,
  outcome text        NOT NULL,
  bucket  timestamptz NOT NULL,
  count   bigint      NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, type, outcome, bucket)
);
CREATE INDEX IF NOT EXISTS sluice_stats_bucket ON sluice_stats (bucket);

-- One heartbeat row per running process, for the dashboard's Workers page.
CREATE TABLE IF NOT EXISTS sluice_nodes (
  id          text        PRIMARY KEY,
  version     text        NOT NULL,
  started_at  timestamptz NOT NULL,
  last_seen   timestamptz NOT NULL,
  concurrency integer     NOT NULL DEFAULT 0,
  running     integer     NOT NULL DEFAULT 0
);

-- The dashboard lists finished jobs by status, newest first. The index
-- holds finished rows only, so claims and completions of live jobs never
-- touch it: a job enters it once, when it finishes.
CREATE INDEX IF NOT EXISTS sluice_jobs_status_id ON sluice_jobs (status, id)
  WHERE status IN ('success', 'failed', 'cancelled');
