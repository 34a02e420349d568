-- The claim: the plain claim, the fair and limited claim (claim state,
-- running counts, partitions, picks, rate buckets), the runnable probe and
-- the hand-back of a failed claim.

-- name: Claim
-- The queue's first runnable jobs without a partition, in claim order
-- (the partition '' of sluice_jobs_fair), locked, with the database clock
-- and whether the queue has pending jobs with a partition: if it has, the
-- driver reads their first ones too (ClaimPartitioned) and merges the
-- two (jobs.go). Without partitions that costs one seek of an empty range
-- of the rescue index (012_pending_indexes.sql).
SELECT UTC_TIMESTAMP(6),
       EXISTS (SELECT 1 FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
               WHERE status = 'pending' AND locked_until IS NULL AND partitioned_queue = ?),
       /*JOB_COLUMNS*/
FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND partition_key = '' AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*TYPES*/
ORDER BY priority, next_run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED

-- name: ClaimPartitioned
-- The queue's first runnable jobs with a partition, in claim order, locked,
-- for the driver to merge with Claim's: the range (pending, NULL,
-- queue) of the rescue index (012_pending_indexes.sql).
SELECT UTC_TIMESTAMP(6), /*JOB_COLUMNS*/
FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'pending' AND locked_until IS NULL AND partitioned_queue = ? AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*TYPES*/
ORDER BY priority, next_run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED

-- name: ClaimUpdate
UPDATE sluice_jobs SET status = 'processing', attempts = attempts + 1, locked_by = ?, locked_until = ?, updated_at = ?,
  progress_done = NULL, progress_total = NULL, progress_message = NULL, progress_at = NULL
WHERE id IN (/*LIST*/)

-- name: ClaimIDs
-- Locks the picked jobs still pending; ClaimUpdate then claims them.
SELECT UTC_TIMESTAMP(6), /*JOB_COLUMNS*/
FROM sluice_jobs
WHERE id IN (/*LIST*/) AND status = 'pending' AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))
FOR UPDATE

-- name: Runnable
-- Any partition's: a range of sluice_jobs_fair's (queue, status) prefix.
SELECT 1 FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*TYPES*/
LIMIT 1

-- name: ReleaseClaim
-- Hands back every job a claim wrote under this token, uncharged: the
-- claimer never received them, so they never ran. Fenced like every other
-- update after a claim: a job that was rescued, or claimed again, since is
-- left alone. The rescue index's 'processing' slice bounds the scan to the
-- jobs held right now.
UPDATE sluice_jobs FORCE INDEX (sluice_jobs_rescue)
SET status = 'pending', attempts = attempts - 1, locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE status = 'processing' AND locked_by = ?

-- name: ClaimStateLock
-- Locks the scope's row until the claim commits (SQLite's write
-- transaction is already exclusive).
SELECT last_partition FROM sluice_claim_state WHERE scope = ?
FOR UPDATE

-- name: ClaimStateInit
INSERT INTO sluice_claim_state (scope) VALUES (?) ON DUPLICATE KEY UPDATE scope = scope

-- name: ClaimStateSet
UPDATE sluice_claim_state SET last_partition = ? WHERE scope = ?

-- name: RunningQueue
SELECT count(*) FROM sluice_jobs WHERE queue = ? AND status = 'processing'

-- name: RunningTypes
-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT type, count(*) FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'processing' AND type IN (/*LIST*/)
GROUP BY type

-- name: RunningParts
SELECT partition_key, count(*) FROM sluice_jobs
WHERE queue = ? AND status = 'processing' AND partition_key IN (/*LIST*/)
GROUP BY partition_key

-- name: FairParts
-- The next partitions of the queue with a pending job after the last one
-- served: an index-only range of sluice_jobs_fair in partition order that
-- stops after n partitions. It reads the entries of the partitions it
-- passes (MariaDB makes it a loose index scan, one seek per partition,
-- only when its statistics show many rows per partition). A recursive
-- skip scan, as on the other databases, was slower: MariaDB reads the
-- dependent subquery by its (queue, status) prefix and filters the rest.
-- Arguments: queue, the last partition served, queue (again), how many.
SELECT partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND partition_key > ? AND queue = ?
GROUP BY partition_key
ORDER BY partition_key
LIMIT ?

-- name: FairPartsFirst
-- FairParts from the first partition of the queue.
-- Arguments: queue, queue (again), how many.
SELECT partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE queue = ? AND status = 'pending' AND queue = ?
GROUP BY partition_key
ORDER BY partition_key
LIMIT ?

-- name: ClaimPick
-- The queue's first runnable jobs in its global order, for a claim with
-- limits: the merge of its jobs without a partition (the partition '' of
-- sluice_jobs_fair) and those with one (the rescue index's pending slice),
-- each branch at most n rows of its index in claim order. Each FILTER
-- marker takes the type conditions of its branch.
SELECT id, type, partition_key FROM (
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
  WHERE queue = ? AND status = 'pending' AND partition_key = '' AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
  UNION ALL
  (SELECT id, type, partition_key, priority, next_run_at FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
  WHERE status = 'pending' AND locked_until IS NULL AND partitioned_queue = ? AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*FILTER*/
  ORDER BY priority, next_run_at, id LIMIT ?)
) pending
ORDER BY priority, next_run_at, id
LIMIT ?

-- name: ClaimPickPart
-- One partition's first runnable jobs, one branch of a fair claim's UNION
-- ALL; the FILTER marker takes the type conditions.
(SELECT id, type, partition_key FROM sluice_jobs FORCE INDEX (sluice_jobs_fair)
WHERE status = 'pending' AND queue = ? AND partition_key = ? AND next_run_at <= UTC_TIMESTAMP(6) AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))/*FILTER*/
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
ON DUPLICATE KEY UPDATE name = name

-- name: BucketPutMany
-- Writes back the rate buckets a limited claim locked, in one statement;
-- the ROWS marker becomes one (name, tokens, updated_at) row of
-- placeholders each, every one an existing bucket.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON DUPLICATE KEY UPDATE tokens = VALUES(tokens), updated_at = VALUES(updated_at)

-- name: MarkPrefetched
-- Marks jobs of a claim that its worker holds but has not started yet
-- (see migration prefetched): a rescue then gives their attempt back.
-- Fenced by the claim's token, so a job held by anyone else is left alone.
UPDATE sluice_jobs SET prefetched_by = locked_by
WHERE status = 'processing' AND locked_by = ? AND id IN (/*LIST*/)

-- name: StartPrefetched
-- A prefetched job starts: from now on a rescue charges its attempt. Its
-- one row matches while the lease is still held and the job's deadline
-- has not passed (a job claimed in time may wait in a worker's prefetch
-- past it; DropLatePrefetched then cancels it).
UPDATE sluice_jobs SET prefetched_by = NULL
WHERE id = ? AND status = 'processing' AND locked_by = ? AND (deadline IS NULL OR deadline > UTC_TIMESTAMP(6))

-- name: DropLatePrefetched
-- A prefetched job whose deadline passed while it waited in its worker
-- never starts: it becomes cancelled with the reason, as SweepDeadlines
-- does, fenced by its claim's token, and its attempt is given back (it
-- never ran). The first two arguments are the history's keep, the same
-- number (see Complete).
UPDATE sluice_jobs
SET status = 'cancelled', finished_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('deadline ', DATE_FORMAT(deadline, '%Y-%m-%dT%H:%i:%sZ'), ' passed before the job started'),
    history = JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_OBJECT('attempt', attempts - 1, 'end', UTC_TIMESTAMP(6), 'outcome', 'cancelled', 'error', CONCAT('deadline ', DATE_FORMAT(deadline, '%Y-%m-%dT%H:%i:%sZ'), ' passed before the job started'))),
    attempts = attempts - 1,
    prefetched_by = NULL, locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id = ? AND status = 'processing' AND locked_by = ? AND deadline <= UTC_TIMESTAMP(6)
