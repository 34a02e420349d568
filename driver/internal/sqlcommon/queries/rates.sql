-- Rate buckets and circuit breakers outside the claim: the statements
-- every dialect runs as written here.

-- name: BucketList
SELECT name, tokens, updated_at FROM sluice_rate_buckets ORDER BY name

-- name: CircuitList
SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits ORDER BY type
