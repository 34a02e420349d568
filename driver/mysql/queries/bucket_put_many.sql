-- Writes back the rate buckets a limited claim locked, in one statement;
-- /*ROWS*/ is a list of (?, ?, ?) rows, every one an existing bucket.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON DUPLICATE KEY UPDATE tokens = VALUES(tokens), updated_at = VALUES(updated_at)
