SELECT id FROM sluice_jobs WHERE key_active = ? LOCK IN SHARE MODE
