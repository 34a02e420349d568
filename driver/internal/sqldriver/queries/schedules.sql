-- Cron schedule statements every dialect runs as written here; the rest
-- are in each dialect's queries/schedules.sql.

-- name: ScheduleList
SELECT name, last_slot, last_job_id, version, fires, skips, updated_at FROM sluice_schedules ORDER BY name
