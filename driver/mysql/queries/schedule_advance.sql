UPDATE sluice_schedules
SET last_slot = ?, last_job_id = COALESCE(?, last_job_id), fires = fires + ?, skips = skips + ?,
    version = version + 1, updated_at = UTC_TIMESTAMP(6)
WHERE name = ? AND version = ?
