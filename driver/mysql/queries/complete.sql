-- What happens to claimed jobs: heartbeats, completions, the rescue of
-- expired leases and the purge of finished jobs.

-- name: Heartbeat
-- SYSDATE(6), not UTC_TIMESTAMP(6): the latter is when the statement
-- started, and a heartbeat that waited behind a lock for longer than the
-- lease would otherwise write an expiry that has already passed. The
-- driver pins the session time zone to UTC, so SYSDATE is UTC too.
UPDATE sluice_jobs SET locked_until = SYSDATE(6) + INTERVAL ? MICROSECOND, updated_at = SYSDATE(6)
WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

-- name: Held
SELECT id FROM sluice_jobs WHERE locked_by = ? AND status = 'processing' AND id IN (/*LIST*/)

-- name: Progress
-- What a running attempt reports, fenced like every completion: a stale
-- token or a finished job changes nothing. Arguments: done, total,
-- message, id, token.
UPDATE sluice_jobs
SET progress_done = ?, progress_total = ?, progress_message = ?, progress_at = UTC_TIMESTAMP(6)
WHERE id = ? AND locked_by = ? AND status = 'processing'

-- name: Complete
-- history: the attempt's entry (NULL: none) is appended, the oldest
-- dropped past keep; a smaller keep than before shrinks the history by one
-- more each attempt until it fits. Its end is the database clock.
-- Arguments: status, refund, final, delay, final, error, result, entry,
-- keep, keep, entry, id, token.
UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND END,
    finished_at = CASE WHEN ? = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = UTC_TIMESTAMP(6),
    history = CASE WHEN ? IS NULL THEN history ELSE JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_SET(?, '$.end', UTC_TIMESTAMP(6))) END
WHERE id = ? AND locked_by = ? AND status = 'processing'

-- name: CompleteMany
UPDATE (/*ROWS*/) u STRAIGHT_JOIN sluice_jobs j FORCE INDEX (PRIMARY) ON j.id = u.id AND j.locked_by = u.token
SET j.status = u.status, j.attempts = j.attempts - u.refund,
    j.next_run_at = CASE WHEN u.keep_run_at = 1 THEN j.next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL u.delay_us MICROSECOND END,
    j.finished_at = CASE WHEN u.finish = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    j.locked_by = NULL, j.locked_until = NULL,
    j.last_error = COALESCE(u.error, j.last_error), j.result = COALESCE(u.result, j.result), j.updated_at = UTC_TIMESTAMP(6)
WHERE j.status = 'processing'

-- name: CompleteManyFirst
SELECT ? AS status, ? AS refund, ? AS keep_run_at, ? AS delay_us, ? AS finish, ? AS error, ? AS result, ? AS id, ? AS token

-- name: CompleteManyHistory
-- CompleteMany for a batch in which some outcome carries a history
-- entry (rows from CompleteManyHistoryFirst); a batch without one
-- takes CompleteMany, which leaves the column alone. history as in
-- Complete, from the row's entry and keep.
UPDATE (/*ROWS*/) u STRAIGHT_JOIN sluice_jobs j FORCE INDEX (PRIMARY) ON j.id = u.id AND j.locked_by = u.token
SET j.status = u.status, j.attempts = j.attempts - u.refund,
    j.next_run_at = CASE WHEN u.keep_run_at = 1 THEN j.next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL u.delay_us MICROSECOND END,
    j.finished_at = CASE WHEN u.finish = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    j.locked_by = NULL, j.locked_until = NULL,
    j.last_error = COALESCE(u.error, j.last_error), j.result = COALESCE(u.result, j.result), j.updated_at = UTC_TIMESTAMP(6),
    j.history = CASE WHEN u.entry IS NULL THEN j.history ELSE JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(j.history, '[]')) > u.keep THEN JSON_REMOVE(j.history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(j.history, '[]')) = u.keep THEN JSON_REMOVE(j.history, '$[0]')
           ELSE COALESCE(j.history, '[]') END,
      '$', JSON_SET(u.entry, '$.end', UTC_TIMESTAMP(6))) END
WHERE j.status = 'processing'

-- name: CompleteManyHistoryFirst
SELECT ? AS status, ? AS refund, ? AS keep_run_at, ? AS delay_us, ? AS finish, ? AS error, ? AS result, ? AS entry, ? AS keep, ? AS id, ? AS token

-- name: Rescue
-- Expired leases in the rescue index's order (partitioned_queue is NULL
-- for every running job), so that the LIMIT stops the read.
-- The lost attempt goes into the history as lease_expired, trimmed to the
-- first two arguments (the same number) as Complete does. A job its claim
-- never started (prefetched_by is the lease's token) gets its attempt
-- back, goes to pending whatever its attempts, and its entry says
-- released. MySQL assigns left to right, reading the values already set:
-- prefetched_by and locked_by are cleared last.
UPDATE sluice_jobs FORCE INDEX (sluice_jobs_rescue)
SET status = 'pending', next_run_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'),
    history = JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_OBJECT('attempt', attempts, 'end', UTC_TIMESTAMP(6), 'outcome', IF(COALESCE(prefetched_by = locked_by, 0), 'released', 'lease_expired'),
        'error', CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'))),
    attempts = attempts - COALESCE(prefetched_by = locked_by, 0),
    prefetched_by = NULL, locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE status = 'processing' AND locked_until < UTC_TIMESTAMP(6) AND (attempts < max_attempts OR COALESCE(prefetched_by = locked_by, 0))
ORDER BY locked_until, partitioned_queue, priority, next_run_at, id
LIMIT ?

-- name: RescueFailedLock
-- The jobs whose lease expired on their last attempt, locked for
-- RescueFailed to fail by id: MySQL has no UPDATE ... RETURNING to give
-- their queue and type, which count them as failed completions. In the
-- rescue index's order, as Rescue.
SELECT id, queue, type FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'processing' AND locked_until < UTC_TIMESTAMP(6) AND attempts >= max_attempts AND NOT COALESCE(prefetched_by = locked_by, 0)
ORDER BY locked_until, partitioned_queue, priority, next_run_at, id
LIMIT ?
FOR UPDATE

-- name: RescueFailed
-- The lost attempt goes into the history as lease_expired, trimmed to the
-- first two arguments (the same number) as Complete does.
UPDATE sluice_jobs
SET status = 'failed', finished_at = UTC_TIMESTAMP(6), next_run_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'),
    history = JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_OBJECT('attempt', attempts, 'end', UTC_TIMESTAMP(6), 'outcome', 'lease_expired',
        'error', CONCAT('lease expired at ', LEFT(DATE_FORMAT(locked_until, '%Y-%m-%d %H:%i:%s.%f'), 23), ' UTC: the worker stopped heartbeating (killed, hung or cut off)'))),
    locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*LIST*/) AND status = 'processing'

-- name: SweepDeadlines
-- Pending jobs whose deadline passed before a claim started them (claims
-- skip them) become cancelled, in deadline order, a range of the index
-- sluice_jobs_deadline (pending_deadline is NULL for every other job). The reason, the deadline to the second, goes into
-- last_error and into the history as a cancelled entry, trimmed to the
-- first two arguments (the same number) as Complete does; its attempt is
-- the attempts made so far (0 for a job that never ran).
UPDATE sluice_jobs FORCE INDEX (sluice_jobs_deadline)
SET status = 'cancelled', finished_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('deadline ', DATE_FORMAT(deadline, '%Y-%m-%dT%H:%i:%sZ'), ' passed before the job started'),
    history = JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_OBJECT('attempt', attempts, 'end', UTC_TIMESTAMP(6), 'outcome', 'cancelled',
        'error', CONCAT('deadline ', DATE_FORMAT(deadline, '%Y-%m-%dT%H:%i:%sZ'), ' passed before the job started'))),
    updated_at = UTC_TIMESTAMP(6)
WHERE pending_deadline <= UTC_TIMESTAMP(6)
ORDER BY pending_deadline
LIMIT ?

-- name: Purge
-- The fourth argument bounds the read of sluice_jobs_status_id: the highest
-- id created before the cutoff (purge.go), past which no row can be due.
DELETE j FROM sluice_jobs j
JOIN (
  SELECT id, status, finished_at FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)
  WHERE status = ? AND finished_at IS NOT NULL AND finished_at < UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND AND id <= ?
  ORDER BY id
  LIMIT ?) d ON j.id = d.id AND j.status = d.status AND j.finished_at = d.finished_at

-- name: PurgeSpan
-- The lowest and highest id of a status: two reads of sluice_jobs_status_id.
SELECT MIN(id), MAX(id) FROM sluice_jobs WHERE status = ?

-- name: PurgeProbe
-- One step of purge.go's search: the first job from an id on, and whether
-- it was created before the cutoff. One read of the primary key.
SELECT id, created_at < UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND FROM sluice_jobs WHERE id >= ? ORDER BY id LIMIT 1
