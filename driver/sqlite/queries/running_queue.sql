SELECT count(*) FROM sluice_jobs WHERE queue = ? AND status IN ('pending', 'processing') AND status = 'processing'
