INSERT INTO sluice_checkpoints (batch, shard, status, chunk_size) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
