UPDATE sluice_checkpoints SET updated_at = UTC_TIMESTAMP(6) WHERE batch = ? AND shard = ? AND version = ?
