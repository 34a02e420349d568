INSERT INTO sluice_stats_latency (queue, type, bucket, slot, count) VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE count = count + VALUES(count)
