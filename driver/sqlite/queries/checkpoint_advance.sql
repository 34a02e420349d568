UPDATE sluice_checkpoints
SET "cursor" = ?, rows_done = rows_done + ?, chunks_done = chunks_done + 1, chunk_size = ?,
    version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE batch = ? AND shard = ? AND version = ?
