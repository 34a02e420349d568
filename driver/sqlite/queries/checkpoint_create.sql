INSERT INTO sluice_checkpoints (batch, shard, status, chunk_size) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING
