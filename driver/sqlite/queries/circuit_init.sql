INSERT INTO sluice_circuits (type, open_until, updated_at) VALUES (?, ?, ?) ON CONFLICT (type) DO NOTHING
