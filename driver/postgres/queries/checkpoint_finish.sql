UPDATE sluice_checkpoints
SET status = $1, last_error = $2, owner = NULL, version = version + 1, updated_at = now()
WHERE batch = $3 AND shard = $4 AND version = $5
