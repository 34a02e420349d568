INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING
