-- Rate buckets and circuit breakers outside the claim.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/rates.sql: BucketList, CircuitList.

-- name: BucketLock
SELECT tokens, updated_at FROM sluice_rate_buckets WHERE name = ?

-- name: BucketInit
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING

-- name: BucketPut
UPDATE sluice_rate_buckets SET tokens = ?, updated_at = ? WHERE name = ?

-- name: CircuitGet
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = ?

-- name: CircuitLock
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = ?

-- name: CircuitInit
INSERT INTO sluice_circuits (type, open_until, updated_at) VALUES (?, ?, ?) ON CONFLICT (type) DO NOTHING

-- name: CircuitPut
UPDATE sluice_circuits SET state = ?, failures = ?, opens = ?, manual = ?, open_until = ?, probe = ?, updated_at = ? WHERE type = ?
