UPDATE sluice_rate_buckets SET tokens = ?, updated_at = ? WHERE name = ?
