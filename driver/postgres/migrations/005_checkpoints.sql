-- Batch cursors: one row per batch and shard (see package batch). version
-- makes two runners of one shard fail fast instead of interleaving.
CREATE TABLE IF NOT EXISTS sluice_checkpoints (
  batch       text        NOT NULL,
  shard       text        NOT NULL,
  "cursor"    text        NULL,
  rows_done   bigint      NOT NULL DEFAULT 0,
  chunks_done bigint      NOT NULL DEFAULT 0,
  chunk_size  int         NOT NULL DEFAULT 0,
  status      text        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'paused', 'done', 'failed')),
  last_error  text        NULL,
  owner       text        NULL,
  version     bigint      NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (batch, shard)
);
