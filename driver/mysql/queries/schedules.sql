-- Cron schedules.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/schedules.sql: ScheduleList.

-- name: ScheduleGet
SELECT name, last_slot, last_job_id, version, fires, skips, updated_at FROM sluice_schedules WHERE name = ?

-- name: ScheduleInit
INSERT INTO sluice_schedules (name, last_slot) VALUES (?, ?) ON DUPLICATE KEY UPDATE name = name

-- name: ScheduleAdvance
UPDATE sluice_schedules
SET last_slot = ?, last_job_id = COALESCE(?, last_job_id), fires = fires + ?, skips = skips + ?,
    version = version + 1, updated_at = UTC_TIMESTAMP(6)
WHERE name = ? AND version = ?

-- name: ScheduleFires
UPDATE sluice_schedules SET fires = fires + ? WHERE name = ?
