-- Batch cursors: one row per batch and shard (see package batch). version
-- makes two runners of one shard fail fast instead of interleaving.
CREATE TABLE IF NOT EXISTS sluice_checkpoints (
  batch       VARCHAR(128) NOT NULL,
  shard       VARCHAR(191) NOT NULL,
  `cursor`    TEXT         NULL,
  rows_done   BIGINT       NOT NULL DEFAULT 0,
  chunks_done BIGINT       NOT NULL DEFAULT 0,
  chunk_size  INT          NOT NULL DEFAULT 0,
  status      VARCHAR(16)  NOT NULL DEFAULT 'running',
  last_error  TEXT         NULL,
  owner       VARCHAR(191) NULL,
  version     BIGINT       NOT NULL DEFAULT 0,
  created_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  updated_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (batch, shard),
  CONSTRAINT sluice_checkpoints_status CHECK (status IN ('running', 'paused', 'done', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
