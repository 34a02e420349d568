SELECT count(*) FROM sluice_jobs WHERE queue = ? AND status = 'processing'
