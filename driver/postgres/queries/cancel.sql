UPDATE sluice_jobs SET status = 'cancelled', finished_at = now(), updated_at = now()
WHERE id = $1 AND status IN ('pending', 'failed')
