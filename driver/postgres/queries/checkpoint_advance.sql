UPDATE sluice_checkpoints
SET "cursor" = $1, rows_done = rows_done + $2, chunks_done = chunks_done + 1, chunk_size = $3,
    version = version + 1, updated_at = now()
WHERE batch = $4 AND shard = $5 AND version = $6
