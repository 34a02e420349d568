INSERT INTO sluice_schedules (name, last_slot) VALUES (?, ?) ON DUPLICATE KEY UPDATE name = name
