-- A prefetched job that never started is not charged (issue 35): a worker
-- marks the jobs of a claim it holds but has not started yet with the
-- claim's token (driver.Driver Prefetched) and clears the mark when one
-- starts (Started). A rescue gives the attempt back when the mark equals
-- the lease it takes: that claim never ran the job. A mark left from an
-- earlier claim never equals a later token, so no other write clears it.
ALTER TABLE sluice_jobs ADD COLUMN prefetched_by VARCHAR(64) NULL;
