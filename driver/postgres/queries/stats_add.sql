INSERT INTO sluice_stats (queue, type, outcome, bucket, count) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (queue, type, outcome, bucket) DO UPDATE SET count = sluice_stats.count + excluded.count
