UPDATE sluice_jobs SET status = 'cancelled', finished_at = now(), updated_at = now()
WHERE id IN (/*IDS*/) AND status IN ('pending', 'failed')
