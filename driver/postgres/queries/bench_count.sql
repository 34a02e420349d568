-- For `sluice bench`: the jobs of a type in a status.
SELECT COUNT(*) FROM sluice_jobs WHERE type = $1 AND status = $2
