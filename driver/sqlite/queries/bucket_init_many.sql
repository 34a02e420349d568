-- Creates the missing rate buckets of a limited claim, full; /*ROWS*/ is a
-- list of (?, ?, ?) rows.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON CONFLICT (name) DO NOTHING
