-- Reads the running jobs only (the rescue index), whose number the
-- cluster's concurrency bounds.
SELECT partition_key, count(*) FROM sluice_jobs
WHERE status = 'processing' AND queue = ? AND partition_key IN (/*IN*/)
GROUP BY partition_key
