INSERT INTO sluice_stats_latency (queue, type, bucket, slot, count) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (queue, type, bucket, slot) DO UPDATE SET count = sluice_stats_latency.count + excluded.count
