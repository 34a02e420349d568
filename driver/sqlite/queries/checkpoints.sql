-- Batch checkpoints.

-- name: CheckpointList
SELECT batch, shard, "cursor", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM sluice_checkpoints ORDER BY batch, shard

-- name: CheckpointGet
SELECT batch, shard, "cursor", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM sluice_checkpoints WHERE batch = ? AND shard = ?

-- name: CheckpointCreate
INSERT INTO sluice_checkpoints (batch, shard, status, chunk_size) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING

-- name: CheckpointTake
UPDATE sluice_checkpoints
SET owner = ?, status = ?, last_error = NULL, version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE batch = ? AND shard = ? AND version = ?

-- name: CheckpointAdvance
UPDATE sluice_checkpoints
SET "cursor" = ?, rows_done = rows_done + ?, chunks_done = chunks_done + 1, chunk_size = ?,
    version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE batch = ? AND shard = ? AND version = ?

-- name: CheckpointFinish
UPDATE sluice_checkpoints
SET status = ?, last_error = ?, owner = NULL, version = version + 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE batch = ? AND shard = ? AND version = ?

-- name: CheckpointRelease
UPDATE sluice_checkpoints
SET owner = NULL, version = version + 1
WHERE batch = ? AND shard = ? AND version = ? AND owner = ?

-- name: CheckpointTouch
UPDATE sluice_checkpoints SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE batch = ? AND shard = ? AND version = ?

-- name: CheckpointStatus
UPDATE sluice_checkpoints SET status = ?, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE batch = ? AND status IN (/*LIST*/)

-- name: CheckpointDelete
DELETE FROM sluice_checkpoints WHERE batch = ?
