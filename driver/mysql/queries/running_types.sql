-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT type, count(*) FROM sluice_jobs FORCE INDEX (sluice_jobs_rescue)
WHERE status = 'processing' AND type IN (/*IN*/)
GROUP BY type
