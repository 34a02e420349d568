INSERT IGNORE INTO sluice_rate_buckets (name, tokens, updated_at) VALUES (?, ?, ?)
