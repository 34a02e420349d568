UPDATE sluice_schedules
SET last_slot = $1, last_job_id = COALESCE($2, last_job_id), fires = fires + $3, skips = skips + $4,
    version = version + 1, updated_at = now()
WHERE name = $5 AND version = $6
