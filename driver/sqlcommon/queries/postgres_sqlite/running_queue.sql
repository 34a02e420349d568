-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT count(*) FROM sluice_jobs WHERE status = 'processing' AND queue = ?
