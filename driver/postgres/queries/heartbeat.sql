-- clock_timestamp(), not now(): now() is when the statement started, and a
-- heartbeat that waited behind a lock for longer than the lease would
-- otherwise write an expiry that has already passed.
UPDATE sluice_jobs SET locked_until = clock_timestamp() + $1::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE locked_by = $2 AND status = 'processing' AND id IN (/*IDS*/)
