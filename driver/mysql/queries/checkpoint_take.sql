UPDATE sluice_checkpoints
SET owner = ?, status = ?, last_error = NULL, version = version + 1, updated_at = UTC_TIMESTAMP(6)
WHERE batch = ? AND shard = ? AND version = ?
