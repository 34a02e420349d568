SELECT id, business_key FROM sluice_jobs
WHERE business_key = ANY($1::text[]) AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))
