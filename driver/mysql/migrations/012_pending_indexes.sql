-- With fair queues, caps and rates all off, a job should cost what it did
-- before them (issue 14). InnoDB keeps an entry for every row in every
-- secondary index and rewrites it whenever one of its columns changes, so
-- sluice_jobs_pick and sluice_jobs_fair together wrote two entries per
-- insert and rewrote two per claim and per completion where one did. Now
-- one of them serves both claims, and the other only holds what changes
-- for jobs with a partition:
--
--  - sluice_jobs_fair becomes (status, queue, partition_key, priority,
--    next_run_at, id): sluice_jobs_pick with the partition after the
--    queue. Its partition '' is sluice_jobs_pick's claim order, which plain
--    claims now read there (claim.sql); a partition's range is that
--    partition's claim order, as before; and leading with status, as
--    sluice_jobs_pick did, it still counts the pending jobs per queue
--    (stats.sql) from the index alone. sluice_jobs_pick goes.
--  - sluice_jobs_partitioned_pending (partitioned_queue, priority,
--    next_run_at, id) holds the pending jobs that have a partition in claim
--    order, so that a queue that is not fair claims them in its global
--    order: claims merge it with the partition '' of sluice_jobs_fair.
--    partitioned_queue is NULL for a job without a partition whatever its
--    status, and InnoDB leaves an index entry alone when its values do not
--    change, so such a job adds one entry on insert and none after; only
--    a retry or a rescue, which moves next_run_at, rewrites it. It is a
--    stored column, as key_active, so that neither purge nor an update has
--    to compute it from the row to maintain the index.
--
-- One ALTER copies the table once (a stored column cannot be added in
-- place) and commits every change together.
ALTER TABLE sluice_jobs
  ADD COLUMN partitioned_queue VARCHAR(64) GENERATED ALWAYS AS (
    CASE WHEN status = 'pending' AND partition_key <> '' THEN queue END) STORED,
  DROP KEY sluice_jobs_pick,
  DROP KEY sluice_jobs_fair,
  ADD KEY sluice_jobs_fair (status, queue, partition_key, priority, next_run_at, id),
  ADD KEY sluice_jobs_partitioned_pending (partitioned_queue, priority, next_run_at, id);
