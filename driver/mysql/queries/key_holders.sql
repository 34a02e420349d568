SELECT business_key, id FROM sluice_jobs WHERE key_active IN (/*IDS*/)
