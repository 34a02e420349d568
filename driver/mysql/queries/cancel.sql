UPDATE sluice_jobs SET status = 'cancelled', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id IN (/*IDS*/) AND status IN ('pending', 'failed')
