SELECT partition_key, count(*) FROM sluice_jobs
WHERE queue = ? AND status = 'processing' AND partition_key IN (/*IN*/)
GROUP BY partition_key
