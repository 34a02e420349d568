INSERT INTO sluice_circuits (type, open_until, updated_at) VALUES ($1, $2, $3) ON CONFLICT (type) DO NOTHING
