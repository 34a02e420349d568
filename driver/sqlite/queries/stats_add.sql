INSERT INTO sluice_stats (queue, type, outcome, bucket, count) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (queue, type, outcome, bucket) DO UPDATE SET count = count + excluded.count
