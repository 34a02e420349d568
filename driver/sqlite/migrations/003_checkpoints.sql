-- Batch cursors: one row per batch and shard (see package batch). version
-- makes two runners of one shard fail fast instead of interleaving.
CREATE TABLE IF NOT EXISTS sluice_checkpoints (
  batch       TEXT    NOT NULL,
  shard       TEXT    NOT NULL,
  "cursor"    TEXT    NULL,
  rows_done   INTEGER NOT NULL DEFAULT 0,
  chunks_done INTEGER NOT NULL DEFAULT 0,
  chunk_size  INTEGER NOT NULL DEFAULT 0,
  status      TEXT    NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'paused', 'done', 'failed')),
  last_error  TEXT    NULL,
  owner       TEXT    NULL,
  version     INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (batch, shard)
);
