-- Named leases, the MySQL lock backend and the node registry.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/leases.sql: LeaseList, NodeList.

-- name: LeaseGet
SELECT holder, fence, acquired_at, expires_at FROM sluice_leases WHERE name = ?

-- name: LeaseAcquire
INSERT INTO sluice_leases (name, holder, fence, acquired_at, expires_at)
VALUES (?, ?, 1, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now', ?))
ON CONFLICT (name) DO UPDATE SET
  fence = CASE WHEN sluice_leases.holder = excluded.holder THEN sluice_leases.fence ELSE sluice_leases.fence + 1 END,
  acquired_at = CASE WHEN sluice_leases.holder = excluded.holder THEN sluice_leases.acquired_at ELSE excluded.acquired_at END,
  holder = excluded.holder,
  expires_at = excluded.expires_at
WHERE sluice_leases.holder = excluded.holder OR sluice_leases.expires_at < excluded.acquired_at
RETURNING holder, fence, acquired_at, expires_at

-- name: LeaseRelease
UPDATE sluice_leases SET holder = '', expires_at = '1970-01-01 00:00:00.000' WHERE name = ? AND holder = ?

-- name: NodeUpsert
INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES (?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?, ?)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, started_at = excluded.started_at,
  last_seen = excluded.last_seen, concurrency = excluded.concurrency, running = excluded.running

-- name: NodeDelete
DELETE FROM sluice_nodes WHERE id = ?

-- name: NodePurge
DELETE FROM sluice_nodes WHERE last_seen < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
