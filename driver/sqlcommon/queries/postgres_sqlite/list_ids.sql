-- The ids of a bulk action's selection; sqlcommon adds the filter.
SELECT id FROM sluice_jobs
