SELECT batch, shard, "cursor", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM sluice_checkpoints ORDER BY batch, shard
