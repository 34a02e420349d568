UPDATE sluice_jobs SET locked_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, updated_at = UTC_TIMESTAMP(6)
WHERE locked_by = ? AND status = 'processing' AND id IN (/*IDS*/)
