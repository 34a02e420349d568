INSERT INTO sluice_stats_latency (queue, type, bucket, slot, count) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (queue, type, bucket, slot) DO UPDATE SET count = count + excluded.count
