UPDATE sluice_jobs
SET status = 'success', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = NULL, locked_until = NULL,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE locked_by = ? AND status = 'processing' AND id IN (/*IDS*/)
RETURNING id
