-- Rate buckets and circuit breakers outside the claim.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/rates.sql: BucketList, CircuitList.

-- name: BucketLock
SELECT tokens, updated_at FROM sluice_rate_buckets WHERE name = ? FOR UPDATE

-- name: BucketInit
INSERT IGNORE INTO sluice_rate_buckets (name, tokens, updated_at) VALUES (?, ?, ?)

-- name: BucketPut
UPDATE sluice_rate_buckets SET tokens = ?, updated_at = ? WHERE name = ?

-- name: CircuitGet
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = ?

-- name: CircuitLock
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = ? FOR UPDATE

-- name: CircuitInit
INSERT IGNORE INTO sluice_circuits (type, open_until, updated_at) VALUES (?, ?, ?)

-- name: CircuitPut
UPDATE sluice_circuits SET state = ?, failures = ?, opens = ?, manual = ?, open_until = ?, probe = ?, updated_at = ? WHERE type = ?
