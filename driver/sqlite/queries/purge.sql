DELETE FROM sluice_jobs WHERE id IN (
  SELECT id FROM sluice_jobs
  WHERE status = ? AND finished_at IS NOT NULL AND finished_at < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
  LIMIT ?)
