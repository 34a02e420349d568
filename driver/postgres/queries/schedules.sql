-- Cron schedules.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/schedules.sql: ScheduleList.

-- name: ScheduleGet
SELECT name, last_slot, last_job_id, version, fires, skips, updated_at FROM sluice_schedules WHERE name = $1

-- name: ScheduleInit
INSERT INTO sluice_schedules (name, last_slot) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING

-- name: ScheduleAdvance
UPDATE sluice_schedules
SET last_slot = $1, last_job_id = COALESCE($2, last_job_id), fires = fires + $3, skips = skips + $4,
    version = version + 1, updated_at = now()
WHERE name = $5 AND version = $6

-- name: ScheduleFires
UPDATE sluice_schedules SET fires = fires + $1 WHERE name = $2
