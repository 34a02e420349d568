UPDATE sluice_jobs SET status = 'cancelled', finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (/*IDS*/) AND status IN ('pending', 'failed')
