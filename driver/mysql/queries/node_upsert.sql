INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES (?, ?, ?, UTC_TIMESTAMP(6), ?, ?)
ON DUPLICATE KEY UPDATE version = VALUES(version), started_at = VALUES(started_at),
  last_seen = VALUES(last_seen), concurrency = VALUES(concurrency), running = VALUES(running)
