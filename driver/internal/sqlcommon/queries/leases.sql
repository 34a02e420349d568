-- Named leases, the MySQL lock backend and the node registry: the
-- statements every dialect runs as written here.

-- name: LeaseList
SELECT name, holder, fence, acquired_at, expires_at FROM sluice_leases ORDER BY name

-- name: NodeList
SELECT id, version, started_at, last_seen, concurrency, running FROM sluice_nodes ORDER BY id
