-- Creates the missing rate buckets of a limited claim, full; the ROWS
-- marker becomes one (name, tokens, updated_at) row of placeholders each.
INSERT INTO sluice_rate_buckets (name, tokens, updated_at) VALUES /*ROWS*/
ON CONFLICT (name) DO NOTHING
