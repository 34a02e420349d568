UPDATE sluice_checkpoints
SET owner = NULL, version = version + 1
WHERE batch = $1 AND shard = $2 AND version = $3 AND owner = $4
