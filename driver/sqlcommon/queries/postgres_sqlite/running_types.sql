-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT type, count(*) FROM sluice_jobs
WHERE status = 'processing' AND type IN (/*IN*/)
GROUP BY type
