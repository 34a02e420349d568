UPDATE sluice_checkpoints
SET status = ?, last_error = ?, owner = NULL, version = version + 1, updated_at = UTC_TIMESTAMP(6)
WHERE batch = ? AND shard = ? AND version = ?
