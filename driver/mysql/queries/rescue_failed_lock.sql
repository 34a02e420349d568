-- The jobs whose lease expired on their last attempt, locked for
-- rescue_failed to fail by id: MySQL has no UPDATE ... RETURNING to give
-- their queue and type, which count them as failed completions. In the
-- rescue index's order, as rescue.sql.
SELECT id, queue, type FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'processing' AND locked_until < UTC_TIMESTAMP(6) AND attempts >= max_attempts
ORDER BY locked_until, partitioned_queue, priority, next_run_at, id
LIMIT ?
FOR UPDATE
