SELECT id FROM sluice_jobs WHERE locked_by = ? AND status = 'processing' AND id IN (/*IDS*/)
