-- The ids of a bulk action's selection; sqlcommon adds one status and the
-- filter. The status index walked newest first stops at the LIMIT; with a
-- type filter MariaDB would otherwise sort every row of the status.
SELECT id FROM sluice_jobs FORCE INDEX (sluice_jobs_status_id)
