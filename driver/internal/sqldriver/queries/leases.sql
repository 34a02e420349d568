-- Lease and node statements every dialect runs as written here; the rest
-- are in each dialect's queries/leases.sql.

-- name: LeaseList
SELECT name, holder, fence, acquired_at, expires_at FROM sluice_leases ORDER BY name

-- name: NodeList
SELECT id, version, started_at, last_seen, concurrency, running FROM sluice_nodes ORDER BY id
