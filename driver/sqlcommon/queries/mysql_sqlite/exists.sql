SELECT status FROM sluice_jobs WHERE id = ?
