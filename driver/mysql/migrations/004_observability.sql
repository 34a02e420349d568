-- Roll-ups of finished jobs per queue, type, outcome and minute; buckets
-- past the success retention are compacted to hours by the maintenance
-- leader. Writers add to a bucket and never count finished rows.
CREATE TABLE IF NOT EXISTS sluice_stats (
  queue   VARCHAR(64) NOT NULL,
  type    VARCHAR(64) NOT NULL,
  outcome VARCHAR(16) NOT NULL,
  bucket  DATETIME(6) NOT NULL,
  count   BIGINT      NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, type, outcome, bucket),
  KEY sluice_stats_bucket (bucket)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One heartbeat row per running process, for the dashboard's Workers page.
CREATE TABLE IF NOT EXISTS sluice_nodes (
  id          VARCHAR(191) NOT NULL,
  version     VARCHAR(64)  NOT NULL,
  started_at  DATETIME(6)  NOT NULL,
  last_seen   DATETIME(6)  NOT NULL,
  concurrency INT          NOT NULL DEFAULT 0,
  running     INT          NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The dashboard lists jobs by status, newest first. MySQL has no partial
-- indexes, so this one covers every status.
CREATE INDEX sluice_jobs_status_id ON sluice_jobs (status, id);
