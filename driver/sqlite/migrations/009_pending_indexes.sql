-- Pending jobs get one index that serves every claim, so a queue without
-- partitions pays for one pending index again, as before fair queues, and
-- running jobs get no index entry beyond the rescue index's:
--
--  - sluice_jobs_pending (queue, partition_key, priority, next_run_at, id)
--    holds every pending job. For the partition '' (no partition) it is the
--    old claim order; for one partition it is that partition's claim order,
--    and its (queue, partition_key) prefix is what a fair claim's skip scan
--    seeks through, one seek per partition.
--  - sluice_jobs_partitioned_pending (queue, priority, next_run_at, id)
--    holds the pending jobs that have a partition, in claim order, so that
--    a queue that is not fair claims them in its global order: claims merge
--    it with the partition '' of sluice_jobs_pending. It is empty, and so
--    costs nothing, without partitions. Its condition is written
--    length(partition_key) > 0, not partition_key <> '': PostgreSQL proves
--    the latter from a fair claim's partition_key = 'A' and may then read
--    one partition through this index, walking the whole queue's backlog.
--    Queries that mean to read it repeat the condition word for word.
--
-- Running jobs are counted per partition over the rescue index
-- (locked_until) WHERE status = 'processing', whose size the cluster's
-- concurrency bounds. The migration runs in one transaction, which holds
-- off enqueues and claims while it builds the two indexes (a scan of the
-- table each).
CREATE INDEX IF NOT EXISTS sluice_jobs_pending ON sluice_jobs (queue, partition_key, priority, next_run_at, id)
  WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS sluice_jobs_partitioned_pending ON sluice_jobs (queue, priority, next_run_at, id)
  WHERE status = 'pending' AND length(partition_key) > 0;
DROP INDEX IF EXISTS sluice_jobs_fair;
DROP INDEX IF EXISTS sluice_jobs_pick;
