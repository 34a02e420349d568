-- A bulk delete's chunk: a job claimed since it was selected is kept.
DELETE FROM sluice_jobs WHERE id IN (/*IDS*/) AND status IN ('pending', 'success', 'failed', 'cancelled')
