-- Rate buckets and circuit breakers outside the claim.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/rates.sql: BucketList, CircuitList.

-- name: BucketLock
SELECT tokens, updated_at FROM sluice_rate_buckets WHERE name = $1 FOR UPDATE

-- name: BucketInit
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING

-- name: BucketPut
UPDATE sluice_rate_buckets SET tokens = $1, updated_at = $2 WHERE name = $3

-- name: CircuitGet
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = $1

-- name: CircuitLock
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = $1 FOR UPDATE

-- name: CircuitInit
INSERT INTO sluice_circuits (type, open_until, updated_at) VALUES ($1, $2, $3) ON CONFLICT (type) DO NOTHING

-- name: CircuitPut
UPDATE sluice_circuits SET state = $1, failures = $2, opens = $3, manual = $4, open_until = $5, probe = $6, updated_at = $7 WHERE type = $8
