INSERT INTO sluice_schedules (name, last_slot) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING
