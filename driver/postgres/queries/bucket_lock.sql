SELECT tokens, updated_at FROM sluice_rate_buckets WHERE name = $1 FOR UPDATE
