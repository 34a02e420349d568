-- Stats statements every dialect runs as written here; the rest are in
-- each dialect's queries/stats.sql.

-- name: GaugesRead
SELECT taken_at, queues FROM sluice_gauges WHERE id = 1
