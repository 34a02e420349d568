UPDATE sluice_jobs SET status = 'processing', attempts = attempts + 1, locked_by = ?, locked_until = ?, updated_at = ?
WHERE id IN (/*IDS*/)
