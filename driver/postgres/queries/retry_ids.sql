SELECT id FROM sluice_jobs
WHERE status = $1 AND ($2::text = '' OR type = $3) AND id > $4
ORDER BY id LIMIT 500
