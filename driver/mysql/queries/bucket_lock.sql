SELECT tokens, updated_at FROM sluice_rate_buckets WHERE name = ? FOR UPDATE
