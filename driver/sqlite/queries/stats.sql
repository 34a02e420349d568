-- Queue counts, per-minute stats, latency histograms, partition stats and
-- paused queues, and the gauge snapshot of /metrics.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/stats.sql: GaugesRead.

-- name: Stats
SELECT queue, 'pending', COUNT(*), MIN(CASE WHEN next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') THEN next_run_at END) FROM sluice_jobs WHERE status = 'pending' GROUP BY queue
UNION ALL
SELECT queue, 'processing', COUNT(*), NULL FROM sluice_jobs WHERE status = 'processing' GROUP BY queue
UNION ALL
SELECT queue, 'failed', COUNT(*), NULL FROM sluice_jobs WHERE status = 'failed' GROUP BY queue
ORDER BY 1

-- name: StatsAdd
INSERT INTO sluice_stats (queue, type, outcome, bucket, count) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (queue, type, outcome, bucket) DO UPDATE SET count = count + excluded.count

-- name: StatsRead
SELECT queue, type, outcome, bucket, count FROM sluice_stats WHERE bucket >= ? ORDER BY bucket

-- name: StatsRange
SELECT queue, type, outcome, bucket, count FROM sluice_stats WHERE bucket >= ? AND bucket < ?

-- name: StatsDeleteRange
DELETE FROM sluice_stats WHERE bucket >= ? AND bucket < ?

-- name: LatencyAdd
INSERT INTO sluice_stats_latency (queue, type, bucket, slot, count) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (queue, type, bucket, slot) DO UPDATE SET count = count + excluded.count

-- name: LatencyRead
SELECT queue, type, bucket, slot, count FROM sluice_stats_latency WHERE bucket >= ? ORDER BY bucket

-- name: LatencyRange
SELECT queue, type, bucket, slot, count FROM sluice_stats_latency WHERE bucket >= ? AND bucket < ?

-- name: LatencyDeleteRange
DELETE FROM sluice_stats_latency WHERE bucket >= ? AND bucket < ?

-- name: PartitionStats
-- The partitions with the largest backlog, the first N of every queue, for
-- stats and the dashboard in one read however many queues there are:
-- pending jobs per partition from an index-only scan of
-- sluice_jobs_pending in (queue, partition) order, running ones from the
-- rescue index (the running jobs, whose number the cluster's concurrency
-- bounds). Only live rows are read.
WITH waiting AS (
  SELECT queue, partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'pending' AND partition_key > ''
  GROUP BY queue, partition_key),
held AS (
  SELECT queue, partition_key, count(*) AS n FROM sluice_jobs
  WHERE status = 'processing' AND partition_key <> ''
  GROUP BY queue, partition_key),
ranked AS (
  SELECT queue, partition_key, COALESCE(waiting.n, 0) AS pending, COALESCE(held.n, 0) AS running,
         row_number() OVER (PARTITION BY queue ORDER BY COALESCE(waiting.n, 0) DESC, partition_key) AS pos
  FROM waiting FULL JOIN held USING (queue, partition_key))
SELECT queue, partition_key, pending, running FROM ranked
WHERE pos <= ?
ORDER BY queue, pos

-- name: QueuePause
INSERT INTO sluice_queues (name, paused, updated_at) VALUES (?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at

-- name: QueuesPaused
SELECT name FROM sluice_queues WHERE paused = 1

-- name: QueuesServe
-- Stamps one queue as served now (ServeQueues), keeping its pause flag.
INSERT INTO sluice_queues (name, paused, updated_at, served_at)
VALUES (?, 0, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (name) DO UPDATE SET served_at = excluded.served_at

-- name: QueuesServed
-- The queues a process has served (ServeQueues) since now + the
-- (negative) duration given.
SELECT name FROM sluice_queues WHERE served_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', ?) ORDER BY name

-- name: QueuesUnserved
-- Pending jobs, by queue, of the queues no process has served
-- (ServeQueues) since now + the (negative) duration given.
SELECT j.queue, COUNT(*) FROM sluice_jobs j WHERE j.status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM sluice_queues q WHERE q.name = j.queue AND q.served_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', ?))
GROUP BY j.queue ORDER BY j.queue

-- name: GaugesClaim
-- Moves the gauge snapshot's taken_at to now if it is older than now + the
-- (negative) duration given: of processes that race, the one whose update
-- changes the row counts for the cluster (driver.Gauges).
UPDATE sluice_gauges SET taken_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = 1 AND taken_at <= strftime('%Y-%m-%d %H:%M:%f', 'now', ?)

-- name: GaugesPut
UPDATE sluice_gauges SET queues = ? WHERE id = 1
