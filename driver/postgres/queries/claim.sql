-- The claim: the plain claim, the fair and limited claim (claim state,
-- running counts, partitions, picks, rate buckets), the runnable probe and
-- the hand-back of a failed claim.

-- name: Claim
-- The queue's first runnable jobs in its global order, a merge of its jobs
-- without a partition (sluice_jobs_pending's partition '') and those with
-- one (sluice_jobs_partitioned_pending): each branch reads at most $4 rows
-- of its index in claim order, and the outer ORDER BY ... LIMIT sorts those
-- 2 × $4 rows at most. Without partitions the second branch is an empty
-- index range.
--
-- FOR UPDATE cannot lock the rows of a UNION, so each branch locks its own:
-- SKIP LOCKED lets concurrent claimers pass each other's rows, and the
-- locking subquery re-checks status on rows changed since its snapshot. A
-- branch may lock a few rows the LIMIT then leaves out; they stay pending,
-- skipped by other claimers until this statement commits.
-- The lease runs from clock_timestamp(), not now(): now() is when the
-- statement began, and a claim that waited behind a lock would hand out a
-- lease already spent.
UPDATE sluice_jobs
SET progress_done = NULL, progress_total = NULL, progress_message = NULL, progress_at = NULL,
    status = 'processing', attempts = attempts + 1, locked_by = $1,
    locked_until = clock_timestamp() + $2::bigint * interval '1 microsecond', updated_at = now()
WHERE id IN (
  SELECT id FROM (
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND queue = $3 AND partition_key = '' AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*TYPES*/
      ORDER BY priority, next_run_at, id
      LIMIT $4
      FOR UPDATE SKIP LOCKED) unpartitioned
    UNION ALL
    SELECT id, priority, next_run_at FROM (
      SELECT id, priority, next_run_at FROM sluice_jobs
      WHERE status = 'pending' AND length(partition_key) > 0 AND queue = $3 AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*TYPES*/
      ORDER BY priority, next_run_at, id
      LIMIT $4
      FOR UPDATE SKIP LOCKED) partitioned
  ) pending
  ORDER BY priority, next_run_at, id
  LIMIT $4)
RETURNING /*JOB_COLUMNS*/

-- name: ClaimIDs
UPDATE sluice_jobs
SET progress_done = NULL, progress_total = NULL, progress_message = NULL, progress_at = NULL,
    status = 'processing', attempts = attempts + 1, locked_by = ?,
    locked_until = clock_timestamp() + ?::bigint * interval '1 microsecond', updated_at = now()
WHERE id IN (/*LIST*/) AND status = 'pending' AND (deadline IS NULL OR deadline > now())
RETURNING /*JOB_COLUMNS*/

-- name: Runnable
SELECT 1 FROM sluice_jobs
WHERE status = 'pending' AND queue = $1 AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*TYPES*/
LIMIT 1

-- name: ReleaseClaim
-- Hands back every job a claim wrote under this token, uncharged: the
-- claimer never received them, so they never ran. Fenced like every other
-- update after a claim: a job that was rescued, or claimed again, since is
-- left alone. The partial index on processing rows bounds the scan to the
-- jobs held right now.
UPDATE sluice_jobs
SET status = 'pending', attempts = attempts - 1, locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE status = 'processing' AND locked_by = $1

-- name: ClaimStateLock
-- Locks the scope's row until the claim commits (SQLite's write
-- transaction is already exclusive).
SELECT last_partition FROM sluice_claim_state WHERE scope = ?
FOR UPDATE

-- name: ClaimStateInit
INSERT INTO sluice_claim_state (scope) VALUES (?) ON CONFLICT DO NOTHING

-- name: ClaimStateSet
UPDATE sluice_claim_state SET last_partition = ? WHERE scope = ?

-- name: RunningQueue
-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT count(*) FROM sluice_jobs WHERE status = 'processing' AND queue = ?

-- name: RunningTypes
-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT type, count(*) FROM sluice_jobs
WHERE status = 'processing' AND type IN (/*LIST*/)
GROUP BY type

-- name: RunningParts
-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT partition_key, count(*) FROM sluice_jobs
WHERE status = 'processing' AND queue = ? AND partition_key IN (/*LIST*/)
GROUP BY partition_key

-- name: FairParts
-- A skip scan of sluice_jobs_pending: each step is one index seek to the next
-- partition of the queue with a pending job, so finding n partitions costs
-- n seeks however many jobs each one holds. The partition '' (jobs without
-- a partition) is a partition like any other.
-- Arguments: queue, the last partition served, queue, how many.
WITH RECURSIVE p(pk, n) AS (
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' AND partition_key > ? ORDER BY partition_key LIMIT 1), 1
  UNION ALL
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' AND partition_key > p.pk ORDER BY partition_key LIMIT 1), n + 1
  FROM p WHERE p.pk IS NOT NULL AND n < ?
)
SELECT pk FROM p WHERE pk IS NOT NULL

-- name: FairPartsFirst
-- A skip scan of sluice_jobs_pending: each step is one index seek to the next
-- partition of the queue with a pending job, so finding n partitions costs
-- n seeks however many jobs each one holds. The partition '' (jobs without
-- a partition) is a partition like any other.
-- Arguments: queue, queue, how many.
WITH RECURSIVE p(pk, n) AS (
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' ORDER BY partition_key LIMIT 1), 1
  UNION ALL
  SELECT (SELECT partition_key FROM sluice_jobs WHERE queue = ? AND status = 'pending' AND partition_key > p.pk ORDER BY partition_key LIMIT 1), n + 1
  FROM p WHERE p.pk IS NOT NULL AND n < ?
)
SELECT pk FROM p WHERE pk IS NOT NULL

-- name: ClaimPick
-- The queue's first runnable jobs in its global order, for a claim with
-- limits: the merge Claim makes of the jobs without a partition and
-- those with one, each branch at most n rows of its index in claim order.
-- Each FILTER marker takes the type conditions of its branch.
SELECT id, type, partition_key FROM (
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs
  WHERE status = 'pending' AND queue = ? AND partition_key = '' AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
  UNION ALL
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs
  WHERE status = 'pending' AND length(partition_key) > 0 AND queue = ? AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
) pending
ORDER BY priority, next_run_at, id
LIMIT ?

-- name: ClaimPickPart
-- One partition's first runnable jobs, one branch of a fair claim's UNION
-- ALL: a range of sluice_jobs_pending, whose partition '' (jobs without a
-- partition) takes its turn like any other. The FILTER marker takes the
-- type conditions.
(SELECT id, type, partition_key FROM sluice_jobs
WHERE status = 'pending' AND queue = ? AND partition_key = ? AND next_run_at <= now() AND (deadline IS NULL OR deadline > now())/*FILTER*/
ORDER BY priority, next_run_at, id LIMIT ?)

-- name: BucketLockMany
-- Locks the rate buckets a limited claim takes tokens from until the claim
-- commits, in name order so that claims lock them in one order (SQLite's
-- write transaction is already exclusive).
SELECT name, tokens, updated_at FROM sluice_rate_buckets
WHERE name IN (/*LIST*/)
ORDER BY name
FOR UPDATE

-- name: BucketInitMany
-- Creates the missing rate buckets of a limited claim, full; the ROWS
-- marker becomes one (name, tokens, updated_at) row of placeholders each.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON CONFLICT (name) DO NOTHING

-- name: BucketPutMany
-- Writes back the rate buckets a limited claim locked, in one statement;
-- the ROWS marker becomes one (name, tokens, updated_at) row of
-- placeholders each, every one an existing bucket.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON CONFLICT (name) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at

-- name: MarkPrefetched
-- Marks jobs of a claim that its worker holds but has not started yet
-- (see migration prefetched): a rescue then gives their attempt back.
-- Fenced by the claim's token, so a job held by anyone else is left alone.
UPDATE sluice_jobs SET prefetched_by = locked_by
WHERE status = 'processing' AND locked_by = $1 AND id IN (/*LIST*/)

-- name: StartPrefetched
-- A prefetched job starts: from now on a rescue charges its attempt. Its
-- one row matches while the lease is still held and the job's deadline
-- has not passed (a job claimed in time may wait in a worker's prefetch
-- past it; DropLatePrefetched then cancels it).
UPDATE sluice_jobs SET prefetched_by = NULL
WHERE id = $1 AND status = 'processing' AND locked_by = $2 AND (deadline IS NULL OR deadline > now())

-- name: DropLatePrefetched
-- A prefetched job whose deadline passed while it waited in its worker
-- never starts: it becomes cancelled with the reason, as SweepDeadlines
-- does, fenced by its claim's token, and its attempt is given back (it
-- never ran). The first two arguments are the history's keep, the same
-- number (see Complete).
UPDATE sluice_jobs
SET status = 'cancelled', finished_at = now(),
    last_error = 'deadline ' || to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' passed before the job started',
    history = (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $1::int THEN history - 0 - 0
                    WHEN jsonb_array_length(COALESCE(history, '[]')) = $2::int THEN history - 0
                    ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('attempt', attempts - 1, 'end', now(), 'outcome', 'cancelled', 'error', 'deadline ' || to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' passed before the job started')),
    attempts = attempts - 1,
    prefetched_by = NULL, locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE id = $3 AND status = 'processing' AND locked_by = $4 AND deadline <= now()
