UPDATE sluice_checkpoints
SET owner = NULL, version = version + 1
WHERE batch = ? AND shard = ? AND version = ? AND owner = ?
