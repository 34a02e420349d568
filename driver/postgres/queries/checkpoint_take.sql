UPDATE sluice_checkpoints
SET owner = $1, status = $2, last_error = NULL, version = version + 1, updated_at = now()
WHERE batch = $3 AND shard = $4 AND version = $5
