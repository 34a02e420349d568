INSERT INTO sluice_stats (queue, type, outcome, bucket, count) VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE count = count + VALUES(count)
