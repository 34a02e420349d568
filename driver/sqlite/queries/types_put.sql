INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES (?, ?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (type) DO UPDATE SET queue = excluded.queue, max_attempts = excluded.max_attempts,
  dedupe = excluded.dedupe, updated_at = excluded.updated_at
