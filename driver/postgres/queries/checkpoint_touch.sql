UPDATE sluice_checkpoints SET updated_at = now() WHERE batch = $1 AND shard = $2 AND version = $3
