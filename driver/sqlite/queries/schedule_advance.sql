UPDATE sluice_schedules
SET last_slot = ?, last_job_id = COALESCE(?, last_job_id), fires = fires + ?, skips = skips + ?,
    version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE name = ? AND version = ?
