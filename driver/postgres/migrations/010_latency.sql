-- Queue latency roll-ups: per queue, type and minute (hours once compacted,
-- as sluice_stats), how many attempts waited a time in each slot of a fixed
-- histogram (driver.LatencySlots: slot i holds waits in [2^(i-1), 2^i) ms)
-- between becoming runnable and starting. Percentiles over an hour or a
-- day are read from the summed slots; no one reads finished rows.
CREATE TABLE IF NOT EXISTS sluice_stats_latency (
  queue  text        NOT NULL,
  type   text        NOT NULL,
  bucket timestamptz NOT NULL,
  slot   smallint    NOT NULL,
  count  bigint      NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, type, bucket, slot)
);
CREATE INDEX IF NOT EXISTS sluice_stats_latency_bucket ON sluice_stats_latency (bucket);
