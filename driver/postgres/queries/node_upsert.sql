INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES ($1, $2, $3, now(), $4, $5)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, started_at = excluded.started_at,
  last_seen = excluded.last_seen, concurrency = excluded.concurrency, running = excluded.running
