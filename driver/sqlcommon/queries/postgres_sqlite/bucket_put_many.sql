-- Writes back the rate buckets a limited claim locked, in one statement;
-- the ROWS marker becomes one (name, tokens, updated_at) row of
-- placeholders each, every one an existing bucket.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON CONFLICT (name) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at
