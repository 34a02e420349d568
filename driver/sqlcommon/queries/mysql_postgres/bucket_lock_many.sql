-- Locks the rate buckets a limited claim takes tokens from until the claim
-- commits, in name order so that claims lock them in one order (SQLite's
-- write transaction is already exclusive).
SELECT name, tokens, updated_at FROM sluice_rate_buckets
WHERE name IN (/*IN*/)
ORDER BY name
FOR UPDATE
