INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND), ?, ?)
