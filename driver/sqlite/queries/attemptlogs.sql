-- Per-attempt logs (driver.AttemptLogs, attemptlogs.go in sqldriver).

-- name: AttemptLogPut
-- Run only for an applied completion, in its transaction. The job's row is read so that a job deleted meanwhile gets no row
-- rather than a foreign key error; a row for the attempt is replaced (a
-- refunded attempt's number runs again).
INSERT INTO sluice_attempt_logs (job_id, attempt, text, bytes, omitted, created_at)
SELECT id, ?, ?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now') FROM sluice_jobs WHERE id = ?
ON CONFLICT (job_id, attempt) DO UPDATE SET text = excluded.text, bytes = excluded.bytes, omitted = excluded.omitted,
  created_at = excluded.created_at

-- name: AttemptLogRead
SELECT job_id, attempt, text, bytes, omitted, created_at FROM sluice_attempt_logs
WHERE job_id = ? AND (? = 0 OR attempt = ?) ORDER BY attempt
