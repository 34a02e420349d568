-- Rate bucket and circuit breaker statements every dialect runs as
-- written here; the rest are in each dialect's queries/rates.sql.

-- name: BucketList
SELECT name, tokens, updated_at FROM sluice_rate_buckets ORDER BY name

-- name: CircuitList
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits ORDER BY type
