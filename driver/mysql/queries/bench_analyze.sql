ANALYZE TABLE sluice_jobs
