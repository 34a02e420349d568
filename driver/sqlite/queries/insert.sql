INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, strftime('%Y-%m-%d %H:%M:%f', 'now', ?)), ?, ?)
ON CONFLICT DO NOTHING
RETURNING id
