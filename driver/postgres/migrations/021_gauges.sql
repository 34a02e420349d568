-- The cluster's one count of live jobs for the /metrics gauges (issue 39):
-- each refresh, the one process whose ClaimGauges moves taken_at (on the
-- database clock) runs the Stats query and writes its counts here; every
-- other process reads them instead of counting again. One row, written in
-- one statement, so a reader never sees half a snapshot and a queue that
-- emptied leaves with the rest. queues is a JSON array of
-- {queue, pending, processing, failed, oldest_pending}; the epoch taken_at
-- makes the first claim win.
CREATE TABLE IF NOT EXISTS sluice_gauges (
  id       smallint    PRIMARY KEY CHECK (id = 1),
  taken_at timestamptz NOT NULL,
  queues   text        NOT NULL
);

INSERT INTO sluice_gauges (id, taken_at, queues) VALUES (1, 'epoch', '[]') ON CONFLICT DO NOTHING;
