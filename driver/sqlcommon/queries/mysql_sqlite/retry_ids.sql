SELECT id FROM sluice_jobs
WHERE status = ? AND (? = '' OR type = ?) AND id > ?
ORDER BY id LIMIT 500
