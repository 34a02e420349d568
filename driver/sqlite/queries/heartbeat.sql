UPDATE sluice_jobs SET locked_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE locked_by = ? AND status = 'processing' AND id IN (/*IDS*/)
