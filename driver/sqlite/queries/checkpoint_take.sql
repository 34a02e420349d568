UPDATE sluice_checkpoints
SET owner = ?, status = ?, last_error = NULL, version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE batch = ? AND shard = ? AND version = ?
