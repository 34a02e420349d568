INSERT INTO sluice_queues (name, paused, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE paused = VALUES(paused), updated_at = VALUES(updated_at)
