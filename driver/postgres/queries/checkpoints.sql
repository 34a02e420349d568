-- Batch checkpoints.

-- name: CheckpointList
SELECT batch, shard, "cursor", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM sluice_checkpoints ORDER BY batch, shard

-- name: CheckpointGet
SELECT batch, shard, "cursor", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM sluice_checkpoints WHERE batch = $1 AND shard = $2

-- name: CheckpointCreate
INSERT INTO sluice_checkpoints (batch, shard, status, chunk_size) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING

-- name: CheckpointTake
UPDATE sluice_checkpoints
SET owner = $1, status = $2, last_error = NULL, version = version + 1, updated_at = now()
WHERE batch = $3 AND shard = $4 AND version = $5

-- name: CheckpointAdvance
UPDATE sluice_checkpoints
SET "cursor" = $1, rows_done = rows_done + $2, chunks_done = chunks_done + 1, chunk_size = $3,
    version = version + 1, updated_at = now()
WHERE batch = $4 AND shard = $5 AND version = $6

-- name: CheckpointFinish
UPDATE sluice_checkpoints
SET status = $1, last_error = $2, owner = NULL, version = version + 1, updated_at = now()
WHERE batch = $3 AND shard = $4 AND version = $5

-- name: CheckpointRelease
UPDATE sluice_checkpoints
SET owner = NULL, version = version + 1
WHERE batch = $1 AND shard = $2 AND version = $3 AND owner = $4

-- name: CheckpointTouch
UPDATE sluice_checkpoints SET updated_at = now() WHERE batch = $1 AND shard = $2 AND version = $3

-- name: CheckpointStatus
UPDATE sluice_checkpoints SET status = $1, updated_at = now() WHERE batch = $2 AND status IN (/*LIST*/)

-- name: CheckpointDelete
DELETE FROM sluice_checkpoints WHERE batch = $1
