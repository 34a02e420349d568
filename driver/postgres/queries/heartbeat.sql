UPDATE sluice_jobs SET locked_until = now() + $1::bigint * interval '1 microsecond', updated_at = now()
WHERE locked_by = $2 AND status = 'processing' AND id IN (/*IDS*/)
