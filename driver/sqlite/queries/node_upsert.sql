INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES (?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?, ?)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, started_at = excluded.started_at,
  last_seen = excluded.last_seen, concurrency = excluded.concurrency, running = excluded.running
