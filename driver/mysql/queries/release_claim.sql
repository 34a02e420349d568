-- Hands back every job a claim wrote under this token, uncharged: the
-- claimer never received them, so they never ran. Fenced like every other
-- update after a claim: a job that was rescued, or claimed again, since is
-- left alone. The rescue index's 'processing' slice bounds the scan to the
-- jobs held right now.
UPDATE sluice_jobs FORCE INDEX (sluice_jobs_rescue)
SET status = 'pending', attempts = attempts - 1, locked_by = NULL, locked_until = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE status = 'processing' AND locked_by = ?
