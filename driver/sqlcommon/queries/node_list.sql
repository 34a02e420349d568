SELECT id, version, started_at, last_seen, concurrency, running FROM sluice_nodes ORDER BY id
