UPDATE sluice_checkpoints SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE batch = ? AND shard = ? AND version = ?
