SELECT name, last_slot, last_job_id, version, fires, skips, updated_at FROM sluice_schedules WHERE name = ?
