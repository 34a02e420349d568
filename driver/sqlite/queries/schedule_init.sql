INSERT INTO sluice_schedules (name, last_slot) VALUES (?, ?) ON CONFLICT (name) DO NOTHING
