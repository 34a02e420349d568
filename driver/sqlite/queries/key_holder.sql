SELECT id FROM sluice_jobs
WHERE business_key = ? AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))
