-- Named leases, the MySQL lock backend and the node registry.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/leases.sql: LeaseList, NodeList.

-- name: LeaseGet
SELECT holder, fence, acquired_at, expires_at FROM sluice_leases WHERE name = ?

-- name: LeaseLock
SELECT holder, fence, acquired_at, expires_at, UTC_TIMESTAMP(6) FROM sluice_leases WHERE name = ? FOR UPDATE

-- name: LeaseInsert
INSERT INTO sluice_leases (name, holder, fence, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?)

-- name: LeaseUpdate
UPDATE sluice_leases SET holder = ?, fence = ?, acquired_at = ?, expires_at = ? WHERE name = ?

-- name: LeaseRelease
UPDATE sluice_leases SET holder = '', expires_at = '1970-01-01 00:00:00' WHERE name = ? AND holder = ?

-- name: LockRecord
INSERT INTO sluice_lock_holders (name, holder, session, fence, since) VALUES (?, ?, CONNECTION_ID(), 1, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE holder = VALUES(holder), session = VALUES(session), fence = fence + 1, since = VALUES(since)

-- name: LockFence
SELECT fence FROM sluice_lock_holders WHERE name = ?

-- name: LockHolder
-- The holder of a busy named lock, by its server-wide key and its name: a
-- row is trusted only if its session is the one IS_USED_LOCK reports.
SELECT u.s, h.holder, h.since FROM (SELECT IS_USED_LOCK(?) AS s) u
LEFT JOIN sluice_lock_holders h ON h.name = ? AND h.session = u.s

-- name: NodeUpsert
INSERT INTO sluice_nodes (id, version, started_at, last_seen, concurrency, running) VALUES (?, ?, ?, UTC_TIMESTAMP(6), ?, ?)
ON DUPLICATE KEY UPDATE version = VALUES(version), started_at = VALUES(started_at),
  last_seen = VALUES(last_seen), concurrency = VALUES(concurrency), running = VALUES(running)

-- name: NodeDelete
DELETE FROM sluice_nodes WHERE id = ?

-- name: NodePurge
DELETE FROM sluice_nodes WHERE last_seen < UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
