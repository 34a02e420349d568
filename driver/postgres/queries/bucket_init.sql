INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING
