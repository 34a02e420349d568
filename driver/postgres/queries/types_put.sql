INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (type) DO UPDATE SET queue = excluded.queue, max_attempts = excluded.max_attempts,
  dedupe = excluded.dedupe, updated_at = excluded.updated_at
