UPDATE sluice_rate_buckets SET tokens = $1, updated_at = $2 WHERE name = $3
