-- A job's partition (its fairness key, for example a tenant id); '' is none.
-- Fair queues claim round-robin across partitions, and concurrency limits
-- count running jobs per partition, both through sluice_jobs_fair: its
-- (queue, status, partition_key) prefix finds a queue's partitions one index
-- seek each and counts one partition's running jobs, and the rest of it is a
-- partition's claim order.
ALTER TABLE sluice_jobs ADD COLUMN partition_key TEXT NOT NULL DEFAULT '' CHECK (length(partition_key) <= 64);
CREATE INDEX IF NOT EXISTS sluice_jobs_fair ON sluice_jobs (queue, status, partition_key, priority, next_run_at, id)
  WHERE status IN ('pending', 'processing');

-- Per-scope claim state: a fair queue's row ('queue:<name>') holds the last
-- partition served, where the next claim resumes, and claims that enforce
-- concurrency limits lock their queue's row (and the 'types' row for
-- per-type limits) so that they count running jobs one at a time.
CREATE TABLE IF NOT EXISTS sluice_claim_state (
  scope          TEXT NOT NULL PRIMARY KEY,
  last_partition TEXT NOT NULL DEFAULT ''
);
