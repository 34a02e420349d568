SELECT name, tokens, updated_at FROM sluice_rate_buckets ORDER BY name
