-- The lowest and highest id of a status: two reads of sluice_jobs_status_id.
SELECT MIN(id), MAX(id) FROM sluice_jobs WHERE status = ?
