INSERT IGNORE INTO sluice_checkpoints (batch, shard, status, chunk_size) VALUES (?, ?, ?, ?)
