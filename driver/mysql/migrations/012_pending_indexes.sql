-- With fair queues, caps and rates all off, a job should cost what it did
-- before them (issue 14). InnoDB keeps an entry for every row in every
-- secondary index, adds it on insert and rewrites it whenever one of its
-- columns changes. sluice_jobs_fair came beside sluice_jobs_pick: one more
-- entry per insert, and two more rewrites per job (claim and completion).
-- The pending jobs are now in claim order twice over without a sixth
-- index:
--
--  - sluice_jobs_fair becomes (status, queue, partition_key, priority,
--    next_run_at, id): sluice_jobs_pick with the partition after the
--    queue. Its partition '' is sluice_jobs_pick's claim order, which plain
--    claims now read there (claim.sql); a partition's range is that
--    partition's claim order, as before; and leading with status, as
--    sluice_jobs_pick did, it still counts the pending jobs per queue
--    (stats.sql) from the index alone. sluice_jobs_pick goes.
--  - The pending jobs with a partition, in claim order, so that a queue
--    that is not fair claims them in its global order (claims merge them
--    with the partition '' of sluice_jobs_fair), go in the pending slice of
--    the rescue index, which held nothing useful: every pending job has a
--    NULL locked_until (each statement that makes a job pending clears its
--    lease). It becomes (status, locked_until, partitioned_queue, priority,
--    next_run_at, id), where partitioned_queue is the queue of a pending
--    job with a partition and NULL otherwise, so its range (pending, NULL,
--    queue) is that claim order. A job without a partition has a NULL there
--    whatever its status, and the rescue entry is rewritten at each status
--    change anyway, so this costs such a job no entry and no rewrite, only
--    the entry's extra bytes; running jobs keep their lease order
--    (rescue.sql). partitioned_queue is a stored column, as key_active, so
--    that neither purge nor an update has to compute it from the row.
--
-- One ALTER copies the table once (a stored column cannot be added in
-- place) and commits every change together.
ALTER TABLE sluice_jobs
  ADD COLUMN partitioned_queue VARCHAR(64) GENERATED ALWAYS AS (
    CASE WHEN status = 'pending' AND partition_key <> '' THEN queue END) STORED,
  DROP KEY sluice_jobs_pick,
  DROP KEY sluice_jobs_fair,
  ADD KEY sluice_jobs_fair (status, queue, partition_key, priority, next_run_at, id),
  DROP KEY sluice_jobs_rescue,
  ADD KEY sluice_jobs_rescue (status, locked_until, partitioned_queue, priority, next_run_at, id);
