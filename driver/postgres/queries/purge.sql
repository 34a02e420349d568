-- The locking subquery re-checks status, so a job retried since the
-- snapshot is not deleted.
DELETE FROM sluice_jobs WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = $1 AND finished_at IS NOT NULL AND finished_at < now() + $2::bigint * interval '1 microsecond'
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
