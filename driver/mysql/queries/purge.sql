-- The fourth argument bounds the read of sluice_jobs_status_id: the highest
-- id created before the cutoff (purge.go), past which no row can be due.
DELETE j FROM sluice_jobs j
JOIN (
  SELECT id, status, finished_at FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)
  WHERE status = ? AND finished_at IS NOT NULL AND finished_at < UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND AND id <= ?
  ORDER BY id
  LIMIT ?) d ON j.id = d.id AND j.status = d.status AND j.finished_at = d.finished_at
