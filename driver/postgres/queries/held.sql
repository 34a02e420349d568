SELECT id FROM sluice_jobs WHERE locked_by = $1 AND status = 'processing' AND id IN (/*IDS*/)
