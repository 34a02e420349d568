-- Per-attempt logs (driver.AttemptLogs, attemptlogs.go in sqldriver).

-- name: AttemptLogPut
-- Run only for an applied completion, in its transaction. The job's row is read so that a job deleted meanwhile gets no row
-- rather than a foreign key error; a row for the attempt is replaced (a
-- refunded attempt's number runs again).
INSERT INTO sluice_attempt_logs (job_id, attempt, text, bytes, omitted, created_at)
SELECT id, ?, ?, ?, ?, UTC_TIMESTAMP(6) FROM sluice_jobs WHERE id = ?
ON DUPLICATE KEY UPDATE text = VALUES(text), bytes = VALUES(bytes), omitted = VALUES(omitted),
  created_at = VALUES(created_at)

-- name: AttemptLogRead
SELECT job_id, attempt, text, bytes, omitted, created_at FROM sluice_attempt_logs
WHERE job_id = ? AND (? = 0 OR attempt = ?) ORDER BY attempt
