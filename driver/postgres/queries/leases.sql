-- Named leases, the MySQL lock backend and the node registry.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/leases.sql: LeaseList, NodeList.

-- name: LeaseGet
SELECT holder, fence, acquired_at, expires_at FROM sluice_leases WHERE name = $1

-- name: LeaseAcquire
INSERT INTO sluice_leases AS l (name, holder, fence, acquired_at, expires_at)
VALUES ($1, $2, 1, now(), now() + $3::bigint * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE SET
  fence = CASE WHEN l.holder = excluded.holder THEN l.fence ELSE l.fence + 1 END,
  acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
  holder = excluded.holder,
  expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at < excluded.acquired_at
RETURNING holder, fence, acquired_at, expires_at

-- name: LeaseRelease
UPDATE sluice_leases SET holder = '', expires_at = 'epoch' WHERE name = $1 AND holder = $2

-- name: NodeUpsert
INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES ($1, $2, $3, now(), $4, $5)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, started_at = excluded.started_at,
  last_seen = excluded.last_seen, concurrency = excluded.concurrency, running = excluded.running

-- name: NodeDelete
DELETE FROM sluice_nodes WHERE id = $1

-- name: NodePurge
DELETE FROM sluice_nodes WHERE last_seen < now() + $1::bigint * interval '1 microsecond'
