-- One step of purge.go's search: the first job from an id on, and whether
-- it was created before the cutoff. One read of the primary key.
SELECT id, created_at < UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND FROM sluice_jobs WHERE id >= ? ORDER BY id LIMIT 1
