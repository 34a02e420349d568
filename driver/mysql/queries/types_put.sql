INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE queue = VALUES(queue), max_attempts = VALUES(max_attempts), dedupe = VALUES(dedupe),
  updated_at = VALUES(updated_at)
