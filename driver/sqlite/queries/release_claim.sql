-- Hands back every job a claim wrote under this token, uncharged: the
-- claimer never received them, so they never ran. Fenced like every other
-- update after a claim: a job that was rescued, or claimed again, since is
-- left alone.
UPDATE sluice_jobs
SET status = 'pending', attempts = attempts - 1, locked_by = NULL, locked_until = NULL,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE status = 'processing' AND locked_by = ?
