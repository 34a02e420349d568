-- A lease token exists exactly while a job is processing. Every transition
-- already keeps this; the constraint makes it a guarantee, which lets the
-- batched completion fence on the token alone (see complete_batch.sql).
ALTER TABLE sluice_jobs DROP CONSTRAINT IF EXISTS sluice_jobs_lease_invariant;
ALTER TABLE sluice_jobs ADD CONSTRAINT sluice_jobs_lease_invariant
  CHECK ((status = 'processing') = (locked_by IS NOT NULL));
