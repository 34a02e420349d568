-- A job's partition (its fairness key, for example a tenant id); '' is none.
-- Fair queues claim round-robin across partitions, and concurrency limits
-- count running jobs per partition, both through sluice_jobs_fair: its
-- (queue, status, partition_key) prefix finds a queue's partitions one index
-- seek each and counts one partition's running jobs, and the rest of it is a
-- partition's claim order. The table's utf8mb4_bin collation makes the
-- round-robin order byte order.
ALTER TABLE sluice_jobs
  ADD COLUMN partition_key VARCHAR(64) NOT NULL DEFAULT '',
  ADD KEY sluice_jobs_fair (queue, status, partition_key, priority, next_run_at, id);

-- Per-scope claim state: a fair queue's row ('queue:<name>') holds the last
-- partition served, where the next claim resumes, and claims that enforce
-- concurrency limits lock their queue's row (and the 'types' row for
-- per-type limits) so that they count running jobs one at a time.
CREATE TABLE IF NOT EXISTS sluice_claim_state (
  scope          VARCHAR(80) NOT NULL,
  last_partition VARCHAR(64) NOT NULL DEFAULT '',
  PRIMARY KEY (scope)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
