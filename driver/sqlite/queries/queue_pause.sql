INSERT INTO sluice_queues (name, paused, updated_at) VALUES (?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
