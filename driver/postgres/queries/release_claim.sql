-- Hands back every job a claim wrote under this token, uncharged: the
-- claimer never received them, so they never ran. Fenced like every other
-- update after a claim: a job that was rescued, or claimed again, since is
-- left alone. The partial index on processing rows bounds the scan to the
-- jobs held right now.
UPDATE sluice_jobs
SET status = 'pending', attempts = attempts - 1, locked_by = NULL, locked_until = NULL, updated_at = now()
WHERE status = 'processing' AND locked_by = $1
